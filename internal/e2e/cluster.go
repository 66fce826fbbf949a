package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What the tests that run a whole local cluster share: kubeup's binaries built for the test, a spec whose DNS
// goes to a test's BIND, and polling.

// BuildBinaries builds the commands of this module named by pkgs ("kubeup.dev/kubeup/cmd/kubeup") into a
// temporary directory, and returns it.
func BuildBinaries(t testing.TB, pkgs ...string) string {
	t.Helper()
	bin := t.TempDir()
	cmd := exec.Command("go", append([]string{"build", "-o", bin + "/"}, pkgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// WithRFC2136 returns spec (the YAML `kubeup create cluster --dry-run -o yaml` prints for the local cloud) with
// spec.local.dns sending the cluster's records to bind by RFC 2136 at server (HOST:PORT), signed with bind's
// TSIG key, which each node reads from secretFile.
func WithRFC2136(t testing.TB, spec string, bind *BIND, server, secretFile string) string {
	t.Helper()
	const local = "  cloudProvider: local\n"
	if !strings.Contains(spec, local) {
		t.Fatalf("not a spec of the local cloud:\n%s", spec)
	}
	dns := local + "  local:\n    dns:\n      provider: rfc2136\n      server: " + server + "\n      tsigKeyName: " + bind.KeyName +
		"\n      tsigAlgorithm: " + bind.KeyAlgorithm + "\n      tsigSecretFile: " + secretFile + "\n"
	return strings.Replace(spec, local, dns, 1)
}

// WaitFor polls cond every second until it holds, or fails t after limit with what it last saw.
func WaitFor[T any](t testing.TB, limit time.Duration, what string, cond func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v, ok := cond()
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; last saw: %v", limit, what, v)
		}
		time.Sleep(time.Second)
	}
}

// Tail is the last n lines of a file (or why it cannot be read), for a failing test's log.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// WriteFile writes a file of the test, mode 0600, making its directory.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
