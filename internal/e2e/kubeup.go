package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MainWithKubeup is the TestMain of a package whose tests run the kubeup binary as an operator does: it builds
// cmd/kubeup once into a temporary directory, sets *bin to it, runs the tests and removes the directory.
func MainWithKubeup(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "kubeup-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "kubeup")
	build := exec.Command("go", "build", "-o", *bin, "kubeup.dev/kubeup/cmd/kubeup")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	code := 1
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "go build kubeup: %v\n", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Kubeup runs a kubeup binary in an environment of its own, logging each run's command line and duration.
type Kubeup struct {
	T   testing.TB
	Bin string
	Env []string
}

// Run runs kubeup with args and returns its stdout, its stderr and its error.
func (k Kubeup) Run(args ...string) (string, string, error) {
	cmd := exec.Command(k.Bin, args...)
	cmd.Env = k.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	k.T.Logf("kubeup %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return stdout.String(), stderr.String(), err
}

// Must runs kubeup with args and returns its stdout; a failure fails the test with both outputs.
func (k Kubeup) Must(args ...string) string {
	k.T.Helper()
	out, errOut, err := k.Run(args...)
	if err != nil {
		k.T.Fatalf("kubeup %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}
