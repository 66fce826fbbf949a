package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
)

// TestStandalone builds the command, refuses bad --faults, runs it on a free port, reads the address it prints,
// makes calls through google.golang.org/api (an operation slowed by --faults) and reads the counts back from
// /__fake/calls; SIGINT stops it cleanly.
func TestStandalone(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "fakegce")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bad := exec.Command(bin, "--faults", `{"rateLimitRate": 2}`)
	if out, err := bad.CombinedOutput(); bad.ProcessState == nil || bad.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "--faults") {
		t.Errorf("fakegce with bad --faults: %v %s; want exit status 2 naming --faults", err, out)
	}

	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--faults", `{"slowOperations": 1, "latencyMillis": 1}`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill() // this test's own child, by its PID
			<-exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v (%q)", err, line)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "fakegce listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q; want fakegce listening on http://127.0.0.1:PORT", line)
	}

	svc, err := compute.NewService(context.Background(), option.WithEndpoint(base+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.Disks.Insert("p", "us-central1-a", &compute.Disk{Name: "d"}).Do()
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for range 3 {
		op, err = svc.ZoneOperations.Get("p", "us-central1-a", op.Name).Do()
		if err != nil {
			t.Fatal(err)
		}
		status = append(status, op.Status)
	}
	if diff := cmp.Diff([]string{"RUNNING", "RUNNING", "DONE"}, status); diff != "" {
		t.Errorf("operation polls with slowOperations 1 (-want +got):\n%s", diff)
	}
	resp, err := http.Get(base + "/__fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		t.Fatalf("GET /__fake/calls: %v", err)
	}
	if diff := cmp.Diff(map[string]int{"compute.disks.insert": 1, "compute.zoneOperations.get": 3}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("fakegce after SIGINT: %v; want a clean exit", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("fakegce did not stop within a minute of SIGINT")
	}
}
