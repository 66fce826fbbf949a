package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
)

// Files are written atomically: a temporary file ".<name>.tmp-<digits>" in the same directory, given its mode
// and owner, synced, renamed over the file (over a symbolic link there too: the link is replaced, never followed),
// and the directory synced.
//
// A run that is killed mid-write leaves its temporary file behind. The next write of the same file removes such
// leftovers (".<name>.tmp-<digits>" for that name alone: a write never touches the temporary file of another
// file, whose task may be writing it at this moment), and never the temporary file of a writer that is alive: a
// writer holds an exclusive flock(2) on its temporary file from its creation until its rename, so a temporary
// file of our naming that can be locked belongs to a writer that is gone (the kernel drops the locks of a dead
// process). The one gap, between the creation of the file and its lock, is closed by the writer: once it holds
// the lock it checks that its file still has a name (a cleaner that locked it first removed it), and starts again
// with a new one if not. Only another process writing the same file can fall in that gap; within a run, one task
// writes one file, so the log that a leftover was removed tells of a killed run, never of a sibling's write.

// isTempOf reports whether name is a temporary file that writeAtomic makes for the file named base:
// ".<base>.tmp-<digits>".
func isTempOf(name, base string) bool {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// writeAtomic replaces the file at node path p with what write writes (see above), with mode and owner (uid or
// gid -1: leave as created). p's directory is resolved inside the root and created if missing; everything happens
// relative to a descriptor of it. When write fails, nothing is left behind.
func (n *Node) writeAtomic(ctx context.Context, p string, mode os.FileMode, uid, gid int, write func(io.Writer) error) error {
	rel, err := n.resolve(p, false, true)
	if err != nil {
		return err
	}
	if rel == "." {
		return engine.Terminal(fmt.Errorf("writing %s: it is the node root", p))
	}
	dir, err := n.openResolved(path.Dir(rel), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("writing %s: opening its directory: %w", p, engine.FileError(err))
	}
	defer dir.Close()
	dirfd, base := int(dir.Fd()), path.Base(rel)
	for _, stale := range removeStaleTemps(dir, base) {
		engine.Logger(ctx).Info("removed a temporary file left by an earlier run", "path", path.Join(path.Dir(p), stale))
	}
	tmp, name, err := createTemp(dir, base)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, engine.FileError(err))
	}
	renamed := false
	defer func() {
		if !renamed {
			unix.Unlinkat(dirfd, name, 0)
		}
		tmp.Close() // after the rename: it holds the lock
	}()
	err = write(tmp)
	if err == nil && (uid >= 0 || gid >= 0) {
		err = engine.FileError(tmp.Chown(uid, gid))
	}
	if err == nil {
		err = engine.FileError(tmp.Chmod(mode)) // after chown, which clears setuid bits
	}
	if err == nil {
		err = engine.FileError(tmp.Sync())
	}
	if err == nil {
		if rerr := unix.Renameat(dirfd, name, dirfd, base); rerr != nil {
			err = engine.FileError(&os.LinkError{Op: "rename", Old: name, New: base, Err: rerr})
		}
		renamed = err == nil
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if err := dir.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing the directory of %s: %w", p, engine.FileError(err))
	}
	return nil
}

// WriteAtomic replaces the file at node path p with what write writes, with mode, as every node task writes files:
// a temporary file of writeAtomic's naming beside it, renamed over it, so that a run killed half way leaves the
// old file whole and its temporary file for the next write to remove. For node tasks of other packages (nodeup's
// Executable). When write fails, nothing is left behind.
func (n *Node) WriteAtomic(ctx context.Context, p string, mode os.FileMode, write func(io.Writer) error) error {
	return n.writeAtomic(ctx, p, mode, -1, -1, write)
}

// writeFileAtomic is writeAtomic with the whole content at hand.
func (n *Node) writeFileAtomic(ctx context.Context, p string, data []byte, mode os.FileMode, uid, gid int) error {
	return n.writeAtomic(ctx, p, mode, uid, gid, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// createTemp creates a new temporary file for base in dir, mode 0600, and locks it (see above).
func createTemp(dir *os.File, base string) (*os.File, string, error) {
	dirfd := int(dir.Fd())
	for range 100 {
		name := "." + base + ".tmp-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
		fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", &os.PathError{Op: "create", Path: path.Join(dir.Name(), name), Err: err}
		}
		var st unix.Stat_t
		if err = unix.Flock(fd, unix.LOCK_EX); err == nil {
			err = unix.Fstat(fd, &st)
		}
		if err != nil {
			unix.Close(fd)
			unix.Unlinkat(dirfd, name, 0)
			return nil, "", &os.PathError{Op: "lock", Path: path.Join(dir.Name(), name), Err: err}
		}
		if st.Nlink == 0 { // a cleaner locked it before we did, and removed it
			unix.Close(fd)
			continue
		}
		return os.NewFile(uintptr(fd), path.Join(dir.Name(), name)), name, nil
	}
	return nil, "", fmt.Errorf("creating a temporary file for %s in %s: no free name in 100 tries", base, dir.Name())
}

// removeStaleTemps removes the temporary files of the file base in dir that no writer holds (see above), and
// returns their names. It is housekeeping: what it cannot remove, it leaves.
func removeStaleTemps(dir *os.File, base string) []string {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil
	}
	dirfd := int(dir.Fd())
	var removed []string
	for _, name := range names {
		if !isTempOf(name, base) {
			continue
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // a symlink, gone, unreadable: not ours to judge
		}
		var held, now unix.Stat_t
		if unix.Fstat(fd, &held) == nil && held.Mode&unix.S_IFMT == unix.S_IFREG &&
			unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil && // no live writer holds it
			unix.Fstatat(dirfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && now.Dev == held.Dev && now.Ino == held.Ino &&
			unix.Unlinkat(dirfd, name, 0) == nil {
			removed = append(removed, name)
		}
		unix.Close(fd)
	}
	return removed
}

// syncDir makes a rename in the host directory dir durable.
func syncDir(dir string) error { return engine.FileError(atomicfile.SyncDir(dir)) }
