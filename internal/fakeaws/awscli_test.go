package fakeaws

import (
	"bytes"
	"encoding/json"
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
	dir      string // a scratch directory for files the commands read or write
}

// newAWSCLI finds the CLI (e2e.CannotRun when there is none) and sets it up for the fake at endpoint.
func newAWSCLI(t *testing.T, endpoint string) *awsCLI {
	t.Helper()
	path := "/usr/bin/aws"
	if _, err := os.Stat(path); err != nil {
		if path, err = exec.LookPath("aws"); err != nil {
			e2e.CannotRun(t, "the AWS CLI (/usr/bin/aws, Debian's awscli; `make` installs it) is not installed")
		}
	}
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
	return &awsCLI{t: t, path: path, endpoint: endpoint, env: env, dir: dir}
}

// run runs aws with args (--endpoint-url and --output json added) and returns its stdout, or an error carrying
// its stderr.
func (a *awsCLI) run(args ...string) ([]byte, error) {
	a.t.Helper()
	cmd := exec.Command(a.path, append([]string{"--endpoint-url", a.endpoint, "--output", "json"}, args...)...)
	cmd.Env, cmd.Dir = a.env, a.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &cliError{args: args, err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
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
