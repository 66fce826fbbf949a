package protokube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

// onLine is an io.Writer (protokube's Err) that closes reached once what was written holds note.
type onLine struct {
	mu      sync.Mutex
	b       strings.Builder
	note    string
	reached chan struct{}
}

func (w *onLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.b.String(), w.note)
	w.b.Write(p)
	if !had && strings.Contains(w.b.String(), w.note) {
		close(w.reached)
	}
	return len(p), nil
}

// TestStopWhileWaitingForTheConfiguration: SIGTERM (Run's context ending) stops a round's wait for a valid node
// configuration, which can last minutes, instead of letting systemd's stop timeout kill protokube. The context
// ends once the round says it waits (not after a guessed time, which a loaded machine may not reach the wait in).
func TestStopWhileWaitingForTheConfiguration(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "node.conf")
	// A configuration whose sha256 line does not match: nodeup's reader waits for a whole one (a write in flight).
	if err := os.WriteFile(conf, []byte("# sha256:0000000000000000000000000000000000000000000000000000000000000000\nkind: NodeConfig\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &onLine{note: "waiting up to 2m for a complete one", reached: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Conf: conf, Root: t.TempDir(), Interval: time.Hour, Err: stderr, Node: volumetasks.Holder{NodeID: "n1", InternalIP: "10.0.0.1"}})
	}()
	select {
	case <-stderr.reached:
	case err := <-done:
		t.Fatalf("Run returned before its round waited for the configuration: %v", err)
	case <-time.After(time.Minute):
		t.Fatalf("the round did not say it waits for the configuration within a minute; it wrote:\n%s", stderr.String())
	}
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

func (w *onLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
