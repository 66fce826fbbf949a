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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/awssdk"
)

// TestStandalone builds the command, refuses bad --faults, runs it on a free port, reads the address it prints,
// makes calls through the SDK (a change pending for --change-pending-polls) and reads the counts back from
// /__fake/calls; SIGINT stops it cleanly.
func TestStandalone(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "fakeaws")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bad := exec.Command(bin, "--faults", `{"throttleRate": 2}`)
	if out, err := bad.CombinedOutput(); bad.ProcessState == nil || bad.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "--faults") {
		t.Errorf("fakeaws with bad --faults: %v %s; want exit status 2 naming --faults", err, out)
	}

	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--change-pending-polls", "1", "--faults", `{"latencyMillis": 1}`)
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
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "fakeaws listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q; want fakeaws listening on http://127.0.0.1:PORT", line)
	}

	c := route53.NewFromConfig(aws.Config{ServiceOptions: []func(string, any){awssdk.ServiceOption}, Region: "us-east-1", BaseEndpoint: aws.String(base), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")})
	ctx := context.Background()
	zone, err := c.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("example.com"), CallerReference: aws.String("r")})
	if err != nil {
		t.Fatalf("CreateHostedZone: %v", err)
	}
	var status []types.ChangeStatus
	for range 2 {
		ch, err := c.GetChange(ctx, &route53.GetChangeInput{Id: zone.ChangeInfo.Id})
		if err != nil {
			t.Fatalf("GetChange: %v", err)
		}
		status = append(status, ch.ChangeInfo.Status)
	}
	if diff := cmp.Diff([]types.ChangeStatus{types.ChangeStatusPending, types.ChangeStatusInsync}, status); diff != "" {
		t.Errorf("GetChange with --change-pending-polls 1 (-want +got):\n%s", diff)
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
	if diff := cmp.Diff(map[string]int{"CreateHostedZone": 1, "GetChange": 2}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("fakeaws after SIGINT: %v; want a clean exit", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("fakeaws did not stop within a minute of SIGINT")
	}
}
