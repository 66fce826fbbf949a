package cloudup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// messages is a LockOptions.Messages that hands each message to the test.
type messages struct{ ch chan string }

func newMessages() *messages { return &messages{ch: make(chan string, 1000)} }

func (m *messages) Write(p []byte) (int, error) {
	select {
	case m.ch <- string(p):
	default: // the test has seen enough
	}
	return len(p), nil
}

// blockedWrite is a store whose first write of one object waits, once it has started, until the test lets it go.
type blockedWrite struct {
	statestore.Store
	path    string
	reached chan struct{} // closed when the write is reached
	release chan struct{} // closed by the test
	once    sync.Once
}

func (s *blockedWrite) WriteFile(ctx context.Context, p string, data []byte) error {
	if p == s.path {
		s.once.Do(func() {
			close(s.reached)
			<-s.release
		})
	}
	return s.Store.WriteFile(ctx, p, data)
}

// TestConcurrentUpdates runs a second `update --yes` while the first is applying. The second waits for the
// first, saying who holds the cluster and since when; then it finds everything done. Without the lock, both
// created the same volumes, and the second failed with "creating volume ...: file already exists".
func TestConcurrentUpdates(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	cs.lockPoll, cs.lockMessageEvery = time.Millisecond, time.Millisecond
	c, igs := newDemo(t, 3)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	blocked := &blockedWrite{Store: cs.Store, path: model.CompletedSpecPath(demo), reached: make(chan struct{}), release: make(chan struct{})}
	first := &Clusters{Store: blocked}
	var firstOut, secondOut bytes.Buffer
	firstDone := make(chan error, 1)
	go func() {
		_, err := first.Update(ctx, demo, UpdateOptions{Out: &firstOut, Apply: true})
		firstDone <- err
	}()
	select {
	case <-blocked.reached:
	case err := <-firstDone:
		t.Fatalf("the first update ended before it applied: %v\n%s", err, &firstOut)
	}

	msgs := newMessages()
	secondDone := make(chan error, 1)
	go func() {
		_, err := cs.Update(ctx, demo, UpdateOptions{Out: &secondOut, Apply: true, Lock: LockOptions{Messages: msgs}})
		secondDone <- err
	}()
	select {
	case m := <-msgs.ch:
		for _, want := range []string{"Waiting for the lock of cluster demo.example.com: held by update --yes by ", "Ctrl-C to stop", "--force-unlock "} {
			if !strings.Contains(m, want) {
				t.Errorf("the waiting message %q lacks %q", m, want)
			}
		}
	case err := <-secondDone:
		close(blocked.release)
		<-firstDone
		t.Fatalf("the second update ran while the first was applying: %v\n%s", err, &secondOut)
	}
	close(blocked.release)
	if err := <-firstDone; err != nil {
		t.Fatalf("the first update: %v\n%s", err, &firstOut)
	}
	if err := <-secondDone; err != nil {
		t.Fatalf("the second update: %v\n%s", err, &secondOut)
	}
	if !strings.Contains(secondOut.String(), "No changes need to be applied") {
		t.Errorf("the second update, after the first:\n%s", &secondOut)
	}
	if _, err := cs.Store.ReadFile(ctx, lockPath(demo)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the lock is left after both updates: %v", err)
	}
}

// TestLock: a lock held by a live run elsewhere is waited for until the context ends or the timeout, and each
// error names the holder and how to take it over; --force-unlock with its ID takes it over; a lock whose
// process is gone (on this machine) is taken over with a message; unlocking leaves another run's lock alone.
func TestLock(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	cs.lockPoll, cs.lockMessageEvery = time.Millisecond, time.Hour
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	hold := func(l lockInfo) {
		t.Helper()
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Store.WriteFile(ctx, lockPath(demo), data); err != nil {
			t.Fatal(err)
		}
	}
	since := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	elsewhere := lockInfo{ID: "0123456789abcdef", Operation: "update --yes", Holder: "alice@laptop", PID: 4242, Since: since, Process: "other-boot/pid:[1]/4242/77"}
	hold(elsewhere)

	cancelled, cancel := context.WithCancel(ctx)
	msgs := newMessages()
	go func() { <-msgs.ch; cancel() }()
	_, err := cs.Lock(cancelled, demo, "update --yes", LockOptions{Messages: msgs})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for the lock of cluster demo.example.com") ||
		!strings.Contains(err.Error(), "update --yes by alice@laptop (pid 4242) since 2025-01-02T03:04:05Z") {
		t.Errorf("Lock until the context ends: %v", err)
	}
	_, err = cs.Lock(ctx, demo, "delete --yes", LockOptions{Timeout: 10 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "cluster demo.example.com is locked by another run, update --yes by alice@laptop") ||
		!strings.Contains(err.Error(), "--force-unlock 0123456789abcdef") {
		t.Errorf("Lock with a timeout: %v", err)
	}

	unlock, err := cs.Lock(ctx, demo, "update --yes", LockOptions{ForceUnlock: elsewhere.ID})
	if err != nil {
		t.Fatalf("Lock --force-unlock: %v", err)
	}
	hold(elsewhere) // alice took it back: unlocking must not remove hers
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if data, _ := cs.Store.ReadFile(ctx, lockPath(demo)); !strings.Contains(string(data), elsewhere.ID) {
		t.Errorf("unlock removed another run's lock: %s", data)
	}

	if runtime.GOOS == "linux" {
		gone := exec.Command("true")
		if err := gone.Run(); err != nil {
			t.Fatal(err)
		}
		dead := elsewhere
		dead.PID = gone.Process.Pid
		dead.Process = strings.Replace(thisProcess(), "/"+strconv.Itoa(os.Getpid())+"/", "/"+strconv.Itoa(dead.PID)+"/", 1)
		hold(dead)
		msgs := newMessages()
		unlock, err := cs.Lock(ctx, demo, "update --yes", LockOptions{Messages: msgs, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("Lock over a dead holder's: %v", err)
		}
		if m := <-msgs.ch; !strings.Contains(m, "Took over the lock of cluster demo.example.com from update --yes by alice@laptop") || !strings.Contains(m, "its process is gone") {
			t.Errorf("taking over a dead holder's lock said %q", m)
		}
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Store.ReadFile(ctx, lockPath(demo)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after unlock: %v, want the lock gone", err)
		}
	}
}

// TestForceUnlockALiveHolder: --force-unlock took the lock of a run that still ran on this machine, silently.
// It is refused, naming the holder and how to stop it, unless Force.
func TestForceUnlockALiveHolder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux tells a live process of this machine (thisProcess)")
	}
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	// This test's own process holds it: a run that still runs on this machine.
	live := lockInfo{ID: "feedfacefeedface", Operation: "update --yes", Holder: "bob@here", PID: os.Getpid(),
		Since: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Process: thisProcess()}
	data, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Store.WriteFile(ctx, lockPath(demo), data); err != nil {
		t.Fatal(err)
	}
	_, err = cs.Lock(ctx, demo, "delete --yes", LockOptions{ForceUnlock: live.ID, ForceFlag: "--force"})
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("--force-unlock of a live holder's lock: %v, want a *HeldError", err)
	}
	for _, want := range []string{"update --yes by bob@here (pid " + strconv.Itoa(os.Getpid()) + ")", "still runs on this machine", "nothing was changed",
		"kill " + strconv.Itoa(os.Getpid()), "add --force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if got, _ := cs.Store.ReadFile(ctx, lockPath(demo)); string(got) != string(data) {
		t.Errorf("the refused --force-unlock changed the lock: %s", got)
	}
	unlock, err := cs.Lock(ctx, demo, "delete --yes", LockOptions{ForceUnlock: live.ID, Force: true})
	if err != nil {
		t.Fatalf("--force-unlock with Force: %v", err)
	}
	if got, _ := cs.Store.ReadFile(ctx, lockPath(demo)); strings.Contains(string(got), live.ID) {
		t.Errorf("--force-unlock with Force left the holder's lock: %s", got)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
}
