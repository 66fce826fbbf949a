package model

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestUserDataRuns runs the user data with bash against a local HTTP server, its /usr/local/bin moved into a
// temporary directory: a nodeup with the right sha256 is installed 0755 and run with the group's configuration
// and its sha256; one with another sha256 is refused with a message naming both sums, and nothing is installed;
// a download that fails is refused too.
func TestUserDataRuns(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sha256sum", "mktemp"} {
		if _, err := exec.LookPath(tool); err != nil {
			e2e.CannotRun(t, "the user data needs %s: %v", tool, err)
		}
	}
	// The "nodeup" served: a script that writes its arguments where the test reads them.
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	binary := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argsFile + "\n"
	sum := sha256.Sum256([]byte(binary))
	good := hex.EncodeToString(sum[:])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/nodeup" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(binary))
	}))
	defer srv.Close()

	c, igs := completeSpec(t, CloudAWS, 1)
	confSHA := strings.Repeat("ab", 32)
	run := func(t *testing.T, url, sha string) (bin string, out string, err error) {
		t.Helper()
		c.Spec.Nodeup = &NodeupSpec{URL: url, SHA256: sha}
		ud, err := UserData(c, igs[0], confSHA)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(t.TempDir(), "usr", "local", "bin")
		script := strings.ReplaceAll(ud, "/usr/local/bin", bin)
		script = strings.ReplaceAll(script, "/dev/console", filepath.Join(dir, "console"))
		script = strings.Replace(script, "--retry 20 --retry-delay 5", "--retry 1 --retry-delay 0", 1)
		cmd := exec.Command("bash", "-c", script)
		b, err := cmd.CombinedOutput()
		return bin, string(b), err
	}

	t.Run("the right nodeup", func(t *testing.T) {
		bin, out, err := run(t, srv.URL+"/nodeup", strings.ToUpper(good))
		if err != nil {
			t.Fatalf("user data: %v\n%s", err, out)
		}
		args, err := os.ReadFile(argsFile)
		if err != nil {
			t.Fatal(err)
		}
		want := "--conf=s3://kubeup-state/demo.example.com/nodeup/" + igs[0].Metadata.Name + "\n--conf-sha256=" + confSHA +
			"\n--install-systemd-unit\n--retries=10\n"
		if string(args) != want {
			t.Errorf("nodeup ran with\n%s\nwant\n%s", args, want)
		}
		st, err := os.Stat(filepath.Join(bin, "nodeup"))
		if err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("installed nodeup: %v, %v; want mode 0755", st, err)
		}
		if entries, _ := os.ReadDir(bin); len(entries) != 1 {
			t.Errorf("%s holds %d files, want nodeup alone (no temporary file left)", bin, len(entries))
		}
	})
	t.Run("another nodeup", func(t *testing.T) {
		os.Remove(argsFile)
		wrong := strings.Repeat("0", 64)
		bin, out, err := run(t, srv.URL+"/nodeup", wrong)
		if err == nil {
			t.Fatalf("user data ran a nodeup whose sha256 is not the spec's:\n%s", out)
		}
		if !strings.Contains(out, "has sha256 "+good+", not "+wrong+" (spec.nodeup.sha256): refusing to run it") {
			t.Errorf("user data said:\n%s", out)
		}
		console, _ := os.ReadFile(filepath.Join(dir, "console"))
		if !strings.Contains(string(console), "refusing to run it") {
			t.Errorf("the console got %q, want the refusal", console)
		}
		if _, err := os.Stat(argsFile); err == nil {
			t.Error("the refused nodeup ran")
		}
		if entries, _ := os.ReadDir(bin); len(entries) != 0 {
			t.Errorf("%s holds %d files after a refusal, want none", bin, len(entries))
		}
	})
	t.Run("no nodeup to download", func(t *testing.T) {
		_, out, err := run(t, srv.URL+"/missing", good)
		if err == nil || !strings.Contains(out, "kubeup: could not download nodeup from "+srv.URL+"/missing") {
			t.Errorf("user data with a missing nodeup: %v\n%s", err, out)
		}
	})
}
