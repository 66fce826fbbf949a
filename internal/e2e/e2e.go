// Package e2e is the harness of kubeup's end-to-end tests (build tag e2e): it boots the cached Debian root
// filesystem with systemd in systemd-nspawn, attaches loop devices over sparse files, and skips a test loudly
// when the machine cannot run it (not root, a tool missing, no cached root filesystem) — or, under CI=true,
// fails it: a green CI means the e2e tests ran. Everything it starts or attaches is undone in t.Cleanup, by
// process id or device, never by name; and because a test binary killed by -timeout or a signal runs no cleanup,
// each of those things is also recorded in a registry under /run that the next run reaps (see reap.go).
//
// It imports only the standard library, so that any package's tests can use it.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RootFSEnv names the environment variable that holds the cached root filesystem (`make e2e-deps` builds it).
const RootFSEnv = "KUBEUP_E2E_ROOTFS"

// DefaultRootFS is where `make e2e-deps` puts the root filesystem when RootFSEnv is not set.
const DefaultRootFS = "/var/cache/kubeup/rootfs-bookworm"

// CIEnv names the environment variable that CI sets to "true": then a test that cannot run fails.
const CIEnv = "CI"

// InCI reports whether the tests run under CI (CI=true, as CI services set it).
func InCI() bool {
	v := strings.ToLower(os.Getenv(CIEnv))
	return v != "" && v != "false" && v != "0"
}

// CannotRun stops t because the machine cannot run it: a loud skip, or under CI=true a failure, so that a green
// CI always means the test ran. Tests outside this package that depend on a tool use it too.
func CannotRun(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("CANNOT RUN under %s=true (a CI run must run every test): %s", CIEnv, msg)
	}
	t.Skip("SKIPPED: " + msg)
}

// RequireRoot skips t, loudly, unless the test runs as root (under CI=true: fails it).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		CannotRun(t, "(e2e) this test needs root; run `sudo make test` on a machine that can")
	}
	reapOnce(t)
}

// RequireTools skips t, loudly, when one of the commands is not installed.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		CannotRun(t, "(e2e) %s not installed; `make e2e-deps` installs what the e2e tests need", strings.Join(missing, ", "))
	}
}

// RootFS returns the cached root filesystem, skipping t, loudly, when there is none.
func RootFS(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(RootFSEnv)
	if dir == "" {
		dir = DefaultRootFS
	}
	if _, err := os.Stat(filepath.Join(dir, "lib/systemd/systemd")); err != nil {
		CannotRun(t, "(e2e) no root filesystem with systemd at %s (%v); `make e2e-deps` builds it", dir, err)
	}
	return dir
}

// Run runs a command on the host and returns its combined output; a failure names the command and its output.
func Run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// MustRun is Run that fails t on error.
func MustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
