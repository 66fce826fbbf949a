package protokube

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

// TestStopWhileWaitingForTheConfiguration: SIGTERM (Run's context ending) stops a round's wait for a valid node
// configuration, which can last minutes, instead of letting systemd's stop timeout kill protokube.
func TestStopWhileWaitingForTheConfiguration(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "node.conf")
	// A configuration whose sha256 line does not match: nodeup's reader waits for a whole one (a write in flight).
	if err := os.WriteFile(conf, []byte("# sha256:0000000000000000000000000000000000000000000000000000000000000000\nkind: NodeConfig\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Conf: conf, Root: t.TempDir(), Interval: time.Hour, Node: volumetasks.Holder{NodeID: "n1", InternalIP: "10.0.0.1"}})
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v, want nil (stopped between rounds)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context ending, while waiting for the configuration")
	}
}
