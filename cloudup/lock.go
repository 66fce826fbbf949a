package cloudup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path"
	"sync"
	"time"

	"kubeup.dev/kubeup/statestore"
)

// LockOptions say how Lock waits for a cluster's lock that another run holds.
type LockOptions struct {
	// Messages receives, every few seconds, who holds the lock and since when (stderr). Nil: say nothing.
	Messages io.Writer
	// Timeout ends the wait with an error; 0 waits until the context ends (Ctrl-C).
	Timeout time.Duration
	// ForceUnlock is the ID of a lock whose holder died, as the waiting message names it: Lock takes it over,
	// unless its holder is known to run still (a process of this machine), which Force alone overrides.
	ForceUnlock string
	// Force lets ForceUnlock take the lock of a run that still runs on this machine. ForceFlag is the flag that
	// sets it, for messages ("" when the command has none).
	Force     bool
	ForceFlag string
}

// HeldError says that --force-unlock named the lock of a run that still runs on this machine.
type HeldError struct {
	Cluster   string
	Holder    string // what lockInfo.String says
	PID       int
	ForceFlag string
}

func (e *HeldError) Error() string {
	how := fmt.Sprintf("stop it (kill %d) and run again: the lock of a run that is gone is taken over", e.PID)
	if e.ForceFlag != "" {
		how += fmt.Sprintf("; or, to take the lock from it while it runs (both would change the cloud at once), add %s", e.ForceFlag)
	}
	return fmt.Sprintf("cluster %s: --force-unlock names the lock of %s, which still runs on this machine: nothing was changed. Let it finish, or %s",
		e.Cluster, e.Holder, how)
}

// lockInfo is what the lock object holds: who holds it, and since when.
type lockInfo struct {
	ID        string    `json:"id"`
	Operation string    `json:"operation"`
	Holder    string    `json:"holder"` // user@host
	PID       int       `json:"pid"`
	Since     time.Time `json:"since"`
	// Process identifies the holder's process on its machine (boot, PID namespace, start time), so that a run on
	// the same machine can tell that it is gone; empty where kubeup cannot tell.
	Process string `json:"process,omitempty"`
}

func (l *lockInfo) String() string {
	return fmt.Sprintf("%s by %s (pid %d) since %s", l.Operation, l.Holder, l.PID, l.Since.Format(time.RFC3339))
}

// lockPath is the object that holds a cluster's lock.
func lockPath(name string) string { return path.Join(name, "lock") }

// Lock takes the cluster's lock for operation ("update --yes"), so that two runs that change the cloud (update
// --yes, delete --yes) never run at once: they would both find a volume missing and both create it. The lock is
// an object of the store created on the condition that it does not exist. While another run holds it, Lock waits
// for it, saying every few seconds who holds it and since when, until the context ends or o.Timeout. A lock whose
// holder is known to be gone (a process of this machine that no longer runs) is taken over, with a message; one
// held from another machine is only taken over when o.ForceUnlock names it. unlock removes the lock (once, however
// often it is called); it works after ctx has ended.
func (cs *Clusters) Lock(ctx context.Context, name, operation string, o LockOptions) (unlock func() error, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	mine, err := newLockInfo(operation)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	p := lockPath(name)
	loc := cs.location(p)
	poll, every := orDefault(cs.lockPoll, time.Second), orDefault(cs.lockMessageEvery, 5*time.Second)
	start := time.Now()
	var lastMessage time.Time
	for {
		held, gen, err := cs.Store.Read(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			gen = statestore.Absent
		} else if err != nil {
			return nil, fmt.Errorf("reading the lock of cluster %s: %w", name, err)
		}
		var holder lockInfo
		takeOver := ""
		if gen != statestore.Absent {
			if err := json.Unmarshal(held, &holder); err != nil || holder.ID == "" {
				return nil, fmt.Errorf("cluster %s: its lock %s cannot be read (%v): if no update or delete of it is running, remove that object and run again",
					name, loc, err)
			}
			switch {
			case o.ForceUnlock != "" && o.ForceUnlock == holder.ID && !o.Force && processRunning(holder.Process):
				return nil, &HeldError{Cluster: name, Holder: holder.String(), PID: holder.PID, ForceFlag: o.ForceFlag}
			case o.ForceUnlock != "" && o.ForceUnlock == holder.ID:
				takeOver = "as --force-unlock says"
			case processGone(holder.Process):
				takeOver = "its process is gone"
			}
		}
		if gen == statestore.Absent || takeOver != "" {
			_, err := cs.Store.WriteIf(ctx, p, data, gen)
			if errors.Is(err, statestore.ErrConflict) {
				continue // another run took it first, or released it: look again
			}
			if err != nil {
				return nil, fmt.Errorf("taking the lock of cluster %s: %w", name, err)
			}
			if takeOver != "" && o.Messages != nil {
				fmt.Fprintf(o.Messages, "Took over the lock of cluster %s from %s: %s.\n", name, holder.String(), takeOver)
			}
			var once sync.Once
			var unlockErr error
			return func() error {
				once.Do(func() { unlockErr = cs.unlock(ctx, name, mine.ID) })
				return unlockErr
			}, nil
		}

		if o.Timeout > 0 && time.Since(start) >= o.Timeout {
			return nil, fmt.Errorf("cluster %s is locked by another run, %s; waited %s for it. If that run died, run again with --force-unlock %s",
				name, holder.String(), o.Timeout, holder.ID)
		}
		if o.Messages != nil && time.Since(lastMessage) >= every {
			lastMessage = time.Now()
			fmt.Fprintf(o.Messages, "Waiting for the lock of cluster %s: held by %s (%s ago). Ctrl-C to stop; if that run died, run again with --force-unlock %s\n",
				name, holder.String(), time.Since(holder.Since).Round(time.Second), holder.ID)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the lock of cluster %s (%s), held by %s: %w", name, loc, holder.String(), ctx.Err())
		case <-time.After(poll):
		}
	}
}

// unlock removes the cluster's lock if it is still the one with id: one taken over with --force-unlock is the
// new holder's.
func (cs *Clusters) unlock(ctx context.Context, name, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	p := lockPath(name)
	held, err := cs.Store.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("releasing the lock of cluster %s: %w", name, err)
	}
	var holder lockInfo
	if json.Unmarshal(held, &holder) != nil || holder.ID != id {
		return nil // not ours any more
	}
	if err := cs.Store.Delete(ctx, p); err != nil {
		return fmt.Errorf("releasing the lock of cluster %s: %w (remove %s)", name, err, cs.location(p))
	}
	return nil
}

func newLockInfo(operation string) (*lockInfo, error) {
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return &lockInfo{
		ID:        hex.EncodeToString(id),
		Operation: operation,
		Holder:    who + "@" + host,
		PID:       os.Getpid(),
		Since:     time.Now().UTC().Truncate(time.Second),
		Process:   thisProcess(),
	}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
