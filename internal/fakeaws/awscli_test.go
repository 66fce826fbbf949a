package fakeaws

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/e2e"
)

// awsCLI runs the AWS CLI (Debian's /usr/bin/aws when there, else the first aws on PATH) against a fake: the
// independent client that says the fake speaks AWS, not only the Go SDK's dialect. Its environment is its own:
// static credentials, us-east-1, empty configuration files, no pager, no IMDS, a HOME of its own.
type awsCLI struct {
	t        *testing.T
	path     string
	endpoint string
	env      []string
	dir      string   // a scratch directory for files the commands read or write
	warm     *warmCLI // nil: each command starts the CLI afresh
}

// awsCLIPath finds the CLI: Debian's /usr/bin/aws when there, else the first aws on PATH (e2e.CannotRun when there
// is none).
func awsCLIPath(t *testing.T) string {
	t.Helper()
	path := "/usr/bin/aws"
	if _, err := os.Stat(path); err != nil {
		if path, err = exec.LookPath("aws"); err != nil {
			e2e.CannotRun(t, "the AWS CLI (/usr/bin/aws, Debian's awscli; `make` installs it) is not installed")
		}
	}
	return path
}

// newAWSCLI finds the CLI (awsCLIPath) and sets it up for the fake at endpoint; when it is a Python script, its
// commands run from a warm interpreter (warmCLI) that stops when t ends.
func newAWSCLI(t *testing.T, endpoint string) *awsCLI {
	t.Helper()
	path := awsCLIPath(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8",
		"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + empty, "AWS_SHARED_CREDENTIALS_FILE=" + empty,
		"AWS_PAGER=", "AWS_EC2_METADATA_DISABLED=true", "AWS_MAX_ATTEMPTS=1",
	}
	return &awsCLI{t: t, path: path, endpoint: endpoint, env: env, dir: dir, warm: startWarmCLI(t, path, env, t.TempDir())}
}

// invoke runs aws with args (--endpoint-url and --output json added): its stdout, its stderr, and an error when it
// does not exit 0.
func (a *awsCLI) invoke(args ...string) (stdout []byte, stderr string, err error) {
	a.t.Helper()
	full := append([]string{"--endpoint-url", a.endpoint, "--output", "json"}, args...)
	if a.warm != nil {
		stdout, stderr, code, err := a.warm.run(a.dir, full)
		if err != nil {
			a.t.Fatalf("aws %s: %v", strings.Join(args, " "), err)
		}
		if code != 0 {
			return stdout, stderr, fmt.Errorf("exit status %d", code)
		}
		return stdout, stderr, nil
	}
	cmd := exec.Command(a.path, full...)
	cmd.Env, cmd.Dir = a.env, a.dir
	var outb, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &errb
	err = cmd.Run()
	return outb.Bytes(), errb.String(), err
}

// run runs aws with args (--endpoint-url and --output json added) and returns its stdout, or an error carrying
// its stderr.
func (a *awsCLI) run(args ...string) ([]byte, error) {
	a.t.Helper()
	stdout, stderr, err := a.invoke(args...)
	if err != nil {
		return stdout, &cliError{args: args, err: err, stderr: stderr}
	}
	return stdout, nil
}

type cliError struct {
	args   []string
	err    error
	stderr string
}

func (e *cliError) Error() string {
	return "aws " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + strings.TrimSpace(e.stderr)
}

// mustRun is run that fails the test on an error.
func (a *awsCLI) mustRun(args ...string) []byte {
	a.t.Helper()
	out, err := a.run(args...)
	if err != nil {
		a.t.Fatal(err)
	}
	return out
}

// json runs aws with args and decodes its JSON answer into v.
func (a *awsCLI) json(v any, args ...string) {
	a.t.Helper()
	out := a.mustRun(args...)
	if err := json.Unmarshal(out, v); err != nil {
		a.t.Fatalf("aws %s: decoding %q: %v", strings.Join(args, " "), out, err)
	}
}
