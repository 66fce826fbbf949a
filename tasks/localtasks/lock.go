package localtasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"kubeup.dev/kubeup/engine"
)

// lockReportInterval is how often a writer waiting for a lock says who holds it.
const lockReportInterval = 3 * time.Second

// holderFile is the record, in a locked directory, of the process that holds the lock: written when the lock is
// taken, removed when it is released. A waiter reads it to say whom it waits for.
const holderFile = ".kubeup-lock"

// dirLock serialises the writers of the files in one directory: within the process by a semaphore, across
// processes by an exclusive flock on the directory itself. Whoever holds it records itself in the directory's
// holderFile (pid, host, command, since when), and removes our stale temporary files (see cleanTemps): they can
// belong to no live writer, since every writer of the directory writes under this lock.
//
// A writer that waits says every report interval, in a warning through engine.Logger, which lock it waits for
// and who holds it; it gives up when its context ends, with an error that names the lock and the holder.
type dirLock struct {
	dir    string
	name   string        // what the lock guards, for messages: "volume pool", "zone file"
	sem    chan struct{} // one holder at a time in this process
	report time.Duration // how often a waiter logs; tests shorten it
	// isTemp tells our temporary files in dir (by their base name) from everything else.
	isTemp func(name string) bool
}

func newDirLock(dir, name string, isTemp func(string) bool) *dirLock {
	return &dirLock{dir: dir, name: name, sem: make(chan struct{}, 1), report: lockReportInterval, isTemp: isTemp}
}

// lockHolder is the holderFile's content.
type lockHolder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// lock takes the lock, creating the directory if need be, and waits for it until ctx is done. The returned
// function releases it.
func (l *dirLock) lock(ctx context.Context) (unlock func(), err error) {
	select {
	case l.sem <- struct{}{}:
	default:
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the %s lock on %s, held by another task of this process: %w", l.name, l.dir, context.Cause(ctx))
		}
	}
	d, err := l.flock(ctx)
	if err != nil {
		<-l.sem
		return nil, err
	}
	holder := l.dir + string(filepath.Separator) + holderFile
	writeHolder(holder)
	cleanTemps(ctx, l.dir, l.isTemp)
	return func() {
		os.Remove(holder)
		d.Close() // closing the last descriptor releases the flock
		<-l.sem
	}, nil
}

// flock takes the flock on the directory, polling, and reports the holder while it waits.
func (l *dirLock) flock(ctx context.Context) (*os.File, error) {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the %s directory: %w", l.name, engine.FileError(err))
	}
	d, err := os.Open(l.dir)
	if err != nil {
		return nil, fmt.Errorf("locking the %s %s: %w", l.name, l.dir, engine.FileError(err))
	}
	start := time.Now()
	poll := time.Millisecond
	report := time.NewTicker(l.report)
	defer report.Stop()
	for {
		err := flock(d)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			d.Close()
			return nil, fmt.Errorf("locking the %s %s: %w", l.name, l.dir, engine.FileError(err))
		}
		select {
		case <-ctx.Done():
			d.Close()
			return nil, fmt.Errorf("waiting for the %s lock on %s, %s: %w", l.name, l.dir, l.holder(), context.Cause(ctx))
		case <-report.C:
			h := readHolder(filepath.Join(l.dir, holderFile))
			engine.Logger(ctx).Warn("waiting for a lock that another process holds",
				"lock", l.name, "path", l.dir, "holder", l.describe(h),
				"pid", h.PID, "host", h.Host, "command", h.Command, "since", h.Since,
				"waited", time.Since(start).Round(time.Second))
		case <-time.After(poll):
			poll = min(2*poll, 50*time.Millisecond)
		}
	}
}

// holder describes who holds the lock, as read now.
func (l *dirLock) holder() string {
	return l.describe(readHolder(filepath.Join(l.dir, holderFile)))
}

// describe says who h is: "held by pid 123 on host h (kubeup update cluster --yes) since 12:00:01".
func (l *dirLock) describe(h lockHolder) string {
	switch {
	case h.PID == 0:
		return "held by a process that left no record of itself in " + filepath.Join(l.dir, holderFile)
	case h.Host == hostname() && processGone(h.PID):
		return fmt.Sprintf("held by another process: the last holder on record, pid %d (%s), has exited", h.PID, h.Command)
	}
	return fmt.Sprintf("held by pid %d on host %s (%s) since %s", h.PID, h.Host, h.Command, formatSince(h.Since, time.Now()))
}

// formatSince gives the time of day alone when it is today.
func formatSince(t, now time.Time) string {
	t = t.Local()
	if y, m, d := t.Date(); now.Day() == d && now.Month() == m && now.Year() == y {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}

// writeHolder records this process as the holder. The record only informs waiters: a failure to write it is
// not the writer's failure, and a torn read of it reads as no record.
func writeHolder(path string) {
	b, err := json.Marshal(lockHolder{PID: os.Getpid(), Host: hostname(), Command: command(), Since: time.Now()})
	if err == nil {
		_ = os.WriteFile(path, append(b, '\n'), 0o644)
	}
}

// readHolder reads the holder's record; the zero lockHolder when there is none, or it cannot be read.
func readHolder(path string) lockHolder {
	var h lockHolder
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &h) != nil {
		h = lockHolder{}
	}
	return h
}

// command is this process's command line, as a holder's record shows it: the program's base name and its
// arguments, at most 200 bytes.
func command() string {
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	c := strings.Join(args, " ")
	if len(c) > 200 {
		c = c[:197] + "..."
	}
	return c
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "(unknown)"
	}
	return h
}
