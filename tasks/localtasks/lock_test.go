package localtasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// holdLockEnv makes the test binary a process that holds the lock on a directory (see startHolder).
const holdLockEnv = "KUBEUP_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdLockEnv); dir != "" {
		holdLock(dir)
		return
	}
	os.Exit(m.Run())
}

// holdLock takes the lock on dir as a writer would, says "locked", and holds it until stdin closes.
func holdLock(dir string) {
	unlock, err := newDirLock(dir, "test", func(string) bool { return false }).lock(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	unlock()
	os.Exit(0)
}

// startHolder starts another process that holds the lock on dir until the test ends, and returns its pid and the
// command its record shows.
func startHolder(t *testing.T, dir string) (pid int, command string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the lock holder (pid %d): %v", cmd.Process.Pid, err)
		}
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		t.Fatalf("the lock holder says %q, %v", line, err)
	}
	return cmd.Process.Pid, filepath.Base(os.Args[0]) + " -test.run=^$"
}

// waitHandler hands the first "waiting" log record to the test.
type waitHandler struct{ records chan slog.Record }

func (h waitHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h waitHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h waitHandler) WithGroup(string) slog.Handler            { return h }
func (h waitHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "waiting for a lock") {
		select {
		case h.records <- r:
		default:
		}
	}
	return nil
}

// An update that waits for a lock another process holds says, in a warning, which lock and who holds it; once its
// context is cancelled, its error names them both.
func TestLockWaitSaysWhoHolds(t *testing.T) {
	tests := []struct {
		name  string
		lock  func(c *Cloud) *dirLock
		task  func(g *engine.Graph[*Cloud])
		write func(ctx context.Context, c *Cloud) error
	}{
		{
			name: "volume pool",
			lock: func(c *Cloud) *dirLock { return c.Pool.lk },
			task: func(g *engine.Graph[*Cloud]) {
				engine.Add(g, &Volume{Name: "v", Zone: ptr("z"), SizeGB: ptr[int32](1)})
			},
			write: func(ctx context.Context, c *Cloud) error {
				return c.Pool.Create(ctx, VolumeInfo{Name: "v", Zone: "z", SizeGB: 1, VolumeType: VolumeTypeSparse})
			},
		},
		{
			name: "zone file",
			lock: func(c *Cloud) *dirLock { return c.Zone.lk },
			task: func(g *engine.Graph[*Cloud]) {
				engine.Add(g, &dnstasks.Record[*Cloud]{Name: "api.example.com", Type: "A", Values: []string{"10.0.0.1"}})
			},
			write: func(ctx context.Context, c *Cloud) error {
				return c.Zone.Upsert(ctx, dnstasks.RecordSet{Name: "api.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCloud(t)
			lk := tt.lock(c)
			lk.report = time.Millisecond
			before := time.Now()
			pid, command := startHolder(t, lk.dir)

			g := engine.NewGraph[*Cloud]()
			tt.task(g)
			h := waitHandler{records: make(chan slog.Record, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := engine.Run(ctx, g, c, engine.Options{Target: engine.Apply, Logger: slog.New(h)})
				done <- err
			}()
			var r slog.Record
			select {
			case r = <-h.records:
			case err := <-done:
				t.Fatalf("the update ended while another process held the lock: %v", err)
			case <-time.After(time.Minute): // a hang guard, not a measure of speed
				t.Fatal("the update waits for the lock without saying so")
			}
			cancel()
			<-done

			got := map[string]any{}
			var since time.Time
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "since" {
					since, _ = a.Value.Any().(time.Time)
				} else if a.Key != "waited" && a.Key != "holder" {
					got[a.Key] = a.Value.Any()
				}
				return true
			})
			want := map[string]any{"lock": tt.name, "path": lk.dir, "pid": int64(pid), "host": hostname(), "command": command}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the waiting warning (-want +got):\n%s", diff)
			}
			if since.Before(before) || since.After(time.Now()) {
				t.Errorf("the holder holds the lock since %v, want a time since the test started", since)
			}

			ctx, cancel = context.WithCancel(context.Background())
			cancel()
			err := tt.write(ctx, c)
			wantErr := fmt.Sprintf("waiting for the %s lock on %s, held by pid %d on host %s (%s) since ", tt.name, lk.dir, pid, hostname(), command)
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("a cancelled wait: %v, want context.Canceled in an error containing %q", err, wantErr)
			}
		})
	}
}

// A waiter says what it can of the holder: its record, that the process on record has exited (an older kubeup,
// or something else, holds the lock), or that there is no record; and a writer of this process that waits for
// another of the same process says so.
func TestLockWaitDescribesHolder(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		record  string // the holder's record; none when empty
		wantErr string
	}{
		{name: "no record", wantErr: "held by a process that left no record of itself in "},
		{name: "torn record", record: `{"pid": 12`, wantErr: "held by a process that left no record of itself in "},
		{name: "holder has exited",
			record:  fmt.Sprintf(`{"pid": %d, "host": %q, "command": "kubeup update cluster demo --yes", "since": "2020-01-02T03:04:05Z"}`, exited.Process.Pid, hostname()),
			wantErr: fmt.Sprintf("held by another process: the last holder on record, pid %d (kubeup update cluster demo --yes), has exited: context deadline exceeded", exited.Process.Pid)},
		{name: "holder on another host",
			record:  `{"pid": 1234, "host": "elsewhere", "command": "kubeup update cluster demo --yes", "since": "2020-01-02T03:04:05Z"}`,
			wantErr: "held by pid 1234 on host elsewhere (kubeup update cluster demo --yes) since 2020-01-02 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t)
			mustCreate(t, p, VolumeInfo{Name: "v", Zone: "z", SizeGB: 1})
			d, err := os.Open(p.Dir())
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil { // a process that keeps no record
				t.Fatal(err)
			}
			if tt.record != "" {
				if err := os.WriteFile(filepath.Join(p.Dir(), holderFile), []byte(tt.record), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			err = p.SetTags(ctx, "v", map[string]string{"a": "1"})
			checkErr(t, "SetTags", err, "waiting for the volume pool lock on "+p.Dir()+", "+tt.wantErr)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("SetTags: %v, want context.DeadlineExceeded", err)
			}
		})
	}

	t.Run("same process", func(t *testing.T) {
		p := newPool(t)
		mustCreate(t, p, VolumeInfo{Name: "v", Zone: "z", SizeGB: 1})
		unlock, err := p.lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err = p.SetTags(ctx, "v", map[string]string{"a": "1"})
		checkErr(t, "SetTags", err, "waiting for the volume pool lock on "+p.Dir()+", held by another task of this process: context canceled")
		unlock()
		if err := p.SetTags(context.Background(), "v", map[string]string{"a": "1"}); err != nil {
			t.Errorf("SetTags once the lock is released: %v", err)
		}
		entries, _ := os.ReadDir(p.Dir())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if slices.Contains(names, holderFile) {
			t.Errorf("the holder's record is left behind once the lock is released: %v", names)
		}
	})
}

// A writer removes the temporary files a killed writer left (ours by their names), but not one a live writer
// holds (its flock), nor anyone else's.
func TestLockCleansStaleTemps(t *testing.T) {
	tests := []struct {
		name   string
		dir    func(c *Cloud) string
		write  func(ctx context.Context, c *Cloud) error
		stale  []string // removed
		live   string   // flocked: kept
		others []string // not ours: kept
		want   []string // the directory afterwards
	}{
		{
			name: "volume pool",
			dir:  func(c *Cloud) string { return c.Pool.Dir() },
			write: func(ctx context.Context, c *Cloud) error {
				return c.Pool.Create(ctx, VolumeInfo{Name: "v", Zone: "z", SizeGB: 1, VolumeType: VolumeTypeSparse})
			},
			stale:  []string{".v.json.tmp-123", ".a.etcd-main.demo.json.tmp-4294967295", ".x.json.tmp-5.json.tmp-6"},
			live:   ".w.json.tmp-456",
			others: []string{".v.json.tmp-", ".v.json.tmp-12a", ".V.json.tmp-1", "v.json.tmp-1", ".v.img.tmp-1", "notes.tmp-1"},
			want: []string{".V.json.tmp-1", ".v.img.tmp-1", ".v.json.tmp-", ".v.json.tmp-12a", ".w.json.tmp-456",
				"notes.tmp-1", "v.img", "v.json", "v.json.tmp-1"},
		},
		{
			name: "zone file",
			dir:  func(c *Cloud) string { return filepath.Dir(c.Zone.Path()) },
			write: func(ctx context.Context, c *Cloud) error {
				return c.Zone.Upsert(ctx, dnstasks.RecordSet{Name: "api.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}})
			},
			stale:  []string{".example.com.zone.tmp-99"},
			live:   ".example.com.zone.tmp-77",
			others: []string{".example.org.zone.tmp-5", ".example.com.zone.tmp-x", "example.com.zone.tmp-1"},
			want: []string{".example.com.zone.tmp-77", ".example.com.zone.tmp-x", ".example.org.zone.tmp-5",
				"example.com.zone", "example.com.zone.tmp-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCloud(t)
			dir := tt.dir(c)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range append(append(tt.stale, tt.live), tt.others...) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			live, err := os.Open(filepath.Join(dir, tt.live))
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close()
			if err := syscall.Flock(int(live.Fd()), syscall.LOCK_EX); err != nil { // a live writer's
				t.Fatal(err)
			}
			if err := tt.write(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s after a write (-want +got):\n%s", dir, diff)
			}
		})
	}
}
