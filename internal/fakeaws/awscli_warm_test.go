package fakeaws

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The AWS CLI (Debian's awscli) is a Python script: each run spends 1-2 s of CPU starting Python and importing the
// CLI before it sends one request, which made the CLI tests the slowest of the package. A warmCLI pays that once per
// test: a Python interpreter (the script's own, from its #! line) imports what the script imports, then forks once
// per command, and the child runs the CLI's own entry script (runpy, as __main__) with the command's arguments,
// stdin on /dev/null and stdout and stderr on files: a fresh process per command that starts from an interpreter
// that already imported the CLI. A CLI that is not a Python script (AWS's own installer ships a binary) runs as a
// process of its own per command.

// warmZygote is the interpreter's program. It reads one JSON request a line on stdin ({"args", "dir", "out",
// "err"}), answers one JSON line ({"code": exit status, negative for a signal}) on the descriptor it was given
// as its stdout, and exits at the end of its input: when the test, or its process, ends.
const warmZygote = `
import json, os, runpy, sys, traceback
path = sys.argv[1]
try:
    import awscli.clidriver  # what Debian's /usr/bin/aws imports
    import awscli.handlers  # the CLI's built-in plugins, which it imports as it starts
except ImportError:
    pass
replies = os.fdopen(os.dup(1), "w")
devnull = os.open(os.devnull, os.O_RDONLY)
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(replies.fileno())  # the command's process holds no descriptor of the test's
            os.chdir(req["dir"])
            out = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            err = os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(devnull, 0)
            os.dup2(out, 1)
            os.dup2(err, 2)
            sys.argv = [path] + req["args"]
            sys.path[0] = os.path.dirname(path)
            try:
                runpy.run_path(path, run_name="__main__")
                code = 0
            except SystemExit as e:
                if e.code is None:
                    code = 0
                elif isinstance(e.code, int):
                    code = e.code
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code & 0xff)
    _, status = os.waitpid(pid, 0)
    replies.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
    replies.flush()
`

// warmCLI runs the CLI at path, in env, from a warm interpreter (see warmZygote), one command at a time.
type warmCLI struct {
	path string
	dir  string // where the commands' output files go

	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	replies *bufio.Reader
	n       int
}

// pythonOf returns the interpreter of the script at path (its #! line), or "" when path is no Python script.
func pythonOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" && len(fields) == 2 { // #!/usr/bin/env python3
		fields = fields[1:]
	}
	if len(fields) != 1 || !strings.HasPrefix(filepath.Base(fields[0]), "python") {
		return ""
	}
	return fields[0]
}

// startWarmCLI starts the interpreter for the CLI at path, or returns nil when path is no Python script. It stops
// when t ends.
func startWarmCLI(t *testing.T, path string, env []string, dir string) *warmCLI {
	t.Helper()
	python := pythonOf(path)
	if python == "" {
		return nil
	}
	w := &warmCLI{path: path, dir: dir}
	w.cmd = exec.Command(python, "-c", warmZygote, path)
	w.cmd.Env, w.cmd.Dir = env, dir
	logFile := filepath.Join(dir, "zygote.log")
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	w.cmd.Stderr = log
	if w.in, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.replies = bufio.NewReader(out)
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("starting %s for the AWS CLI %s: %v", python, path, err)
	}
	t.Cleanup(func() {
		w.in.Close() // the interpreter exits at the end of its input
		exited := make(chan error, 1)
		go func() { exited <- w.cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the AWS CLI's interpreter (pid %d): %v\n%s", w.cmd.Process.Pid, err, readLog(logFile))
			}
		case <-time.After(time.Minute):
			w.cmd.Process.Kill()
			<-exited
			t.Errorf("the AWS CLI's interpreter (pid %d) did not exit at the end of its input: killed", w.cmd.Process.Pid)
		}
	})
	return w
}

// run runs the CLI with args in dir; code is its exit status (negative: killed by that signal).
func (w *warmCLI) run(dir string, args []string) (stdout []byte, stderr string, code int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	outFile := filepath.Join(w.dir, "out-"+strconv.Itoa(w.n))
	errFile := filepath.Join(w.dir, "err-"+strconv.Itoa(w.n))
	defer os.Remove(outFile)
	defer os.Remove(errFile)
	req, err := json.Marshal(map[string]any{"args": args, "dir": dir, "out": outFile, "err": errFile})
	if err != nil {
		return nil, "", 0, err
	}
	if _, err := w.in.Write(append(req, '\n')); err != nil {
		return nil, "", 0, fmt.Errorf("the AWS CLI's interpreter: %w\n%s", err, readLog(filepath.Join(w.dir, "zygote.log")))
	}
	line, err := w.replies.ReadBytes('\n')
	if err != nil {
		return nil, "", 0, fmt.Errorf("the AWS CLI's interpreter: %w\n%s", err, readLog(filepath.Join(w.dir, "zygote.log")))
	}
	var reply struct{ Code int }
	if err := json.Unmarshal(line, &reply); err != nil {
		return nil, "", 0, fmt.Errorf("the AWS CLI's interpreter answered %q: %w", line, err)
	}
	if stdout, err = os.ReadFile(outFile); err != nil {
		return nil, "", 0, err
	}
	errb, err := os.ReadFile(errFile)
	if err != nil {
		return nil, "", 0, err
	}
	return stdout, string(errb), reply.Code, nil
}

func readLog(path string) string {
	b, _ := os.ReadFile(path)
	return string(bytes.TrimSpace(b))
}
