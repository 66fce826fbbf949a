package e2e

import (
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
