// Package fakecontroltest runs a fake's command (fakecontrol.Serve) in a test: built from the package the test is
// in, refusing bad --faults, serving on a free port, and stopping cleanly on SIGINT. It is for tests only.
package fakecontroltest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Build builds the command of the package in the test's directory, called name, and returns the binary's path.
func Build(t *testing.T, name string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// RefusesFaults checks the command exits with status 2, naming --faults, when given faults.
func RefusesFaults(t *testing.T, bin, faults string) {
	t.Helper()
	bad := exec.Command(bin, "--faults", faults)
	if out, err := bad.CombinedOutput(); bad.ProcessState == nil || bad.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "--faults") {
		t.Errorf("%s --faults %s: %v %s; want exit status 2 naming --faults", filepath.Base(bin), faults, err, out)
	}
}

// Command is a fake's command serving for a test; it is killed when the test ends, unless Interrupt stopped it.
type Command struct {
	// Base is the address it serves on: http://127.0.0.1:PORT.
	Base    string
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	exited  chan error
	stopped bool
}

// Start runs bin with args and --listen 127.0.0.1:0, and reads the address it prints first
// ("NAME listening on http://127.0.0.1:PORT").
func Start(t *testing.T, bin string, args ...string) *Command {
	t.Helper()
	c := &Command{t: t, name: filepath.Base(bin), cmd: exec.Command(bin, append([]string{"--listen", "127.0.0.1:0"}, args...)...),
		exited: make(chan error, 1)}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = os.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if !c.stopped {
			c.cmd.Process.Kill() // this test's own child, by its PID
			<-c.exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v (%q)", err, line)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), c.name+" listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q; want %s listening on http://127.0.0.1:PORT", line, c.name)
	}
	c.Base = base
	return c
}

// Calls reads the call counts from GET /__fake/calls.
func (c *Command) Calls() map[string]int {
	c.t.Helper()
	resp, err := http.Get(c.Base + "/__fake/calls")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		c.t.Fatalf("GET /__fake/calls: %v", err)
	}
	return calls
}

// Interrupt sends the command SIGINT and checks it exits cleanly (within a minute: a bound on a hang).
func (c *Command) Interrupt() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		c.t.Fatal(err)
	}
	select {
	case err := <-c.exited:
		c.stopped = true
		if err != nil {
			c.t.Errorf("%s after SIGINT: %v; want a clean exit", c.name, err)
		}
	case <-time.After(time.Minute):
		c.t.Fatalf("%s did not stop within a minute of SIGINT", c.name)
	}
}
