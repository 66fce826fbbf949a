package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// stopRecorder is a testing.TB that records how a helper stopped the test instead of stopping it.
type stopRecorder struct {
	testing.TB
	how, msg string
}

func (r *stopRecorder) Helper() {}
func (r *stopRecorder) Fatalf(format string, args ...any) {
	r.how, r.msg = "fail", format
	runtime.Goexit()
}
func (r *stopRecorder) Skip(args ...any) {
	r.how = "skip"
	runtime.Goexit()
}

// Under CI=true a test that cannot run fails; elsewhere it skips loudly.
func TestCannotRunFailsUnderCI(t *testing.T) {
	for _, tt := range []struct{ ci, want string }{
		{"true", "fail"}, {"1", "fail"}, {"", "skip"}, {"false", "skip"},
	} {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv(CIEnv, tt.ci)
			r := &stopRecorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				CannotRun(r, "needs %s", "a thing")
			}()
			<-done
			if r.how != tt.want {
				t.Errorf("CannotRun with CI=%q: %s, want %s", tt.ci, r.how, tt.want)
			}
			if r.how == "fail" && !strings.Contains(r.msg, "CANNOT RUN") {
				t.Errorf("failure message %q does not say the test could not run", r.msg)
			}
		})
	}
}

// .ci/run sets CI=true itself, whatever the runner's environment says, so that a green CI run means the e2e
// tests ran: a runner without CI (or with CI=false) still gets failures, not skips. The script runs here with a
// `make` on PATH that prints what it was given.
func TestCIRunSetsCI(t *testing.T) {
	dir := t.TempDir()
	fakeMake := "#!/bin/sh\necho \"CI=$CI make $*\"\n"
	if err := os.WriteFile(filepath.Join(dir, "make"), []byte(fakeMake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ci := range []string{"", "false"} {
		cmd := exec.Command("bash", "../../.ci/run")
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
		if ci != "" {
			cmd.Env = append(cmd.Env, "CI="+ci)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf(".ci/run with CI=%q: %v\n%s", ci, err, out)
		}
		if got, want := strings.TrimSpace(string(out)), "CI=true make test"; got != want {
			t.Errorf(".ci/run with CI=%q ran %q, want %q", ci, got, want)
		}
	}
}

// A running demo's record of kubelet's kernel settings stops the tests from taking the same settings; a dangling
// link (a demo removed without make demo-clean) does not.
func TestDemoHoldsSysctls(t *testing.T) {
	dir := t.TempDir()
	saved := demoSysctls
	t.Cleanup(func() { demoSysctls = saved })
	demoSysctls = filepath.Join(dir, "kubeup-demo.sysctls")
	if err := demoHolds(); err != nil {
		t.Errorf("no demo: %v", err)
	}
	record := filepath.Join(dir, "made-sysctls")
	if err := os.Symlink(record, demoSysctls); err != nil {
		t.Fatal(err)
	}
	if err := demoHolds(); err != nil {
		t.Errorf("a dangling link: %v", err)
	}
	if err := os.WriteFile(record, []byte("vm/overcommit_memory=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := demoHolds(); err == nil || !strings.Contains(err.Error(), "make demo-clean") {
		t.Errorf("a demo holds them: %v, want an error that says make demo-clean", err)
	}
}
