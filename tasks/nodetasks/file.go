package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/engine"
)

// File types.
const (
	TypeFile      = "file"
	TypeDirectory = "directory"
	TypeSymlink   = "symlink"
)

// File is a regular file, a directory or a symbolic link on the node, with its contents, mode, owner and group.
type File struct {
	// Path is the absolute path on the node, such as "/etc/kubernetes/kubelet.conf", and the task's name.
	Path string
	// Type is "file" (when nil), "directory" or "symlink".
	Type *string
	// Contents is the whole content of a file; nil = don't care.
	Contents *string
	// SecretContents is the whole content of a file that holds a secret (a private key, a kubeconfig with one):
	// compared like Contents, shown as (sensitive) in every plan and log. Set at most one of the two.
	SecretContents *engine.Secret
	// Target is a symlink's target.
	Target *string
	// Mode is the permission bits (0644 for a new file and 0755 for a new directory when nil).
	Mode *os.FileMode
	// Owner is a user name (looked up in the node's /etc/passwd) or a numeric id.
	Owner *string
	// Group is a group name (looked up in the node's /etc/group) or a numeric id.
	Group *string
	// After orders this file after other tasks, such as the file that creates its user.
	After []engine.Task `kubeup:"-"`

	found *fileStat // what Find saw, for Render; unexported, so never compared
}

// fileStat is what Find saw of a file, whatever the task asked about.
type fileStat struct {
	typ      string
	mode     os.FileMode
	uid, gid int
}

var (
	_ engine.Resource[*File, *Node] = (*File)(nil)
	_ engine.Renderer[*File, *Node] = (*File)(nil)
)

func (f *File) Key() engine.Key     { return engine.Key{Type: "File", Name: f.Path} }
func (f *File) Deps() []engine.Task { return f.After }

// Find reads the file, directory or symlink at Path; nil when there is none. It reads the contents only when the
// task states them, and reports owner and group by number or by name, as the task names them.
func (f *File) Find(ctx context.Context, n *Node) (*File, error) {
	found, ok, err := n.lstatNode(f.Path)
	if err != nil || !ok {
		return nil, err
	}
	actual := &File{Path: f.Path, Type: &found.typ, found: found}
	switch found.typ {
	case TypeFile:
		if f.Contents != nil || f.SecretContents != nil {
			want := ""
			if f.Contents != nil {
				want = *f.Contents
			} else {
				want = f.SecretContents.Reveal()
			}
			fd, size, err := n.openNodeFD(f.Path, false)
			if err != nil {
				return nil, err
			}
			got, same, err := readComparing(fd, size, want)
			unix.Close(fd)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", f.Path, engine.FileError(err))
			}
			switch {
			case f.Contents != nil && same:
				actual.Contents = f.Contents
			case f.Contents != nil:
				actual.Contents = &got
			case same:
				actual.SecretContents = f.SecretContents
			default:
				secret := engine.NewSecret(got)
				actual.SecretContents = &secret
			}
		}
		actual.Mode = &found.mode
	case TypeDirectory:
		actual.Mode = &found.mode
	case TypeSymlink:
		p, err := n.hostPath(f.Path, false)
		if err != nil {
			return nil, err
		}
		target, err := os.Readlink(p)
		if err != nil {
			return nil, engine.FileError(err)
		}
		actual.Target = &target
	}
	if actual.Owner, err = n.nameOf("/etc/passwd", found.uid, f.Owner); err != nil {
		return nil, err
	}
	if actual.Group, err = n.nameOf("/etc/group", found.gid, f.Group); err != nil {
		return nil, err
	}
	return actual, nil
}

// readComparing reads the file open at fd whole (size: what fstat said, a hint) and compares it with want. same
// says the bytes are want's, and then nothing is copied (a converged node's files are read every round); else got
// holds them. The reading buffer is reused across calls.
func readComparing(fd int, size int64, want string) (got string, same bool, err error) {
	bp := readBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledRead {
			readBuffers.Put(bp)
		}
	}()
	buf := slices.Grow((*bp)[:0], int(max(size, 0))+1) // +1: EOF is seen without growing
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
		m, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			*bp = buf
			return "", false, err
		}
		if m == 0 {
			break
		}
		buf = buf[:len(buf)+m]
	}
	*bp = buf
	if string(buf) == want {
		return "", true, nil
	}
	return string(buf), false, nil
}

// statOfSys is statOf for what fstat(2) says.
func statOfSys(st *unix.Stat_t) *fileStat {
	s := &fileStat{mode: fs.FileMode(st.Mode & 0o777), uid: int(st.Uid), gid: int(st.Gid)}
	if st.Mode&unix.S_ISUID != 0 {
		s.mode |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		s.mode |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		s.mode |= fs.ModeSticky
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		s.typ = TypeFile
	case unix.S_IFDIR:
		s.typ = TypeDirectory
	case unix.S_IFLNK:
		s.typ = TypeSymlink
	case unix.S_IFSOCK:
		s.typ = "socket"
	case unix.S_IFIFO:
		s.typ = "named pipe"
	default:
		s.typ = "device"
	}
	return s
}

// readBuffers holds readComparing's buffers; one larger than maxPooledRead is let go after use.
var readBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledRead = 1 << 20

// statOf describes what Lstat saw: its type ("file", "directory", "symlink", or what else it is), mode and
// owner.
func statOf(st fs.FileInfo) *fileStat {
	s := &fileStat{mode: st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), uid: -1, gid: -1}
	switch t := st.Mode().Type(); {
	case t == 0:
		s.typ = TypeFile
	case t == fs.ModeDir:
		s.typ = TypeDirectory
	case t == fs.ModeSymlink:
		s.typ = TypeSymlink
	case t&fs.ModeSocket != 0:
		s.typ = "socket"
	case t&fs.ModeNamedPipe != 0:
		s.typ = "named pipe"
	default:
		s.typ = "device"
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.uid, s.gid = int(sys.Uid), int(sys.Gid)
	}
	return s
}

func typeOf(f *File) string {
	if f.Type == nil {
		return TypeFile
	}
	return *f.Type
}

// Validate checks what needs no look at the node: the path, the type and the fields it takes, the mode's bits,
// the owner's and group's syntax.
func (f *File) Validate() error {
	if err := checkNodePath("Path", f.Path); err != nil {
		return err
	}
	t := typeOf(f)
	switch t {
	case TypeFile, TypeDirectory:
		if f.Target != nil {
			return fmt.Errorf("field Target is for a symlink; this is a %s: set Type to %q or drop Target", t, TypeSymlink)
		}
		if f.Contents != nil && f.SecretContents != nil {
			return errors.New("fields Contents and SecretContents both set: set one")
		}
		if t == TypeDirectory && (f.Contents != nil || f.SecretContents != nil) {
			return errors.New("field Contents is for a file; this is a directory: drop Contents or set Type to \"file\"")
		}
	case TypeSymlink:
		if f.Target == nil || *f.Target == "" {
			return errors.New("field Target is required for a symlink: set it to what the link points to")
		}
		if strings.ContainsRune(*f.Target, 0) {
			return fmt.Errorf("field Target: %q contains a NUL byte", *f.Target)
		}
		if f.Contents != nil || f.SecretContents != nil || f.Mode != nil {
			return errors.New("a symlink has neither Contents nor Mode of its own: drop them, or manage the target")
		}
	default:
		return fmt.Errorf("field Type: %q is not one of %q, %q, %q", t, TypeFile, TypeDirectory, TypeSymlink)
	}
	if err := checkMode("Mode", f.Mode); err != nil {
		return err
	}
	if err := checkOwner("Owner", f.Owner); err != nil {
		return err
	}
	return checkOwner("Group", f.Group)
}

func (f *File) CheckChanges(actual, expected, changes *File) error {
	if err := expected.Validate(); err != nil {
		return err
	}
	t := typeOf(expected)
	if actual == nil {
		return nil
	}
	switch at := *actual.Type; {
	case at != TypeFile && at != TypeDirectory && at != TypeSymlink:
		return engine.Terminal(fmt.Errorf("%s is a %s, not a %s: kubeup replaces only files, directories and symlinks: remove it", expected.Path, at, t))
	case at == TypeDirectory && t != TypeDirectory:
		return engine.Terminal(fmt.Errorf("%s is a directory, not a %s: kubeup does not remove directories: remove it by hand", expected.Path, t))
	}
	return nil
}

// Render writes what differs. A file's new contents are written atomically, with mode and owner set before the
// rename; a mode or owner change alone is made in place. A symlink is replaced atomically (a new link renamed
// over it).
func (f *File) Render(ctx context.Context, n *Node, actual, expected, changes *File) error {
	p, err := n.hostPath(expected.Path, true)
	if err != nil {
		return err
	}
	uid, gid, err := n.owner(expected.Owner, expected.Group)
	if err != nil {
		return err
	}
	t := typeOf(expected)
	var found *fileStat
	if actual != nil {
		found = actual.found
	}
	replace := found != nil && found.typ != t
	if replace && t == TypeDirectory {
		// A file or a symlink is renamed over what was there; a new directory cannot be, so make room first.
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("replacing the %s at %s: %w", found.typ, expected.Path, engine.FileError(err))
		}
		found = nil
	}
	log := engine.Logger(ctx)
	switch t {
	case TypeFile:
		mode := os.FileMode(0o644)
		switch {
		case expected.Mode != nil:
			mode = *expected.Mode
		case found != nil && !replace:
			mode = found.mode
		}
		if found == nil || replace || changes.Contents != nil || changes.SecretContents != nil {
			if uid < 0 && gid < 0 && found != nil && !replace {
				uid, gid = found.uid, found.gid // a new inode keeps the old owner
			}
			data := ""
			switch {
			case expected.Contents != nil:
				data = *expected.Contents
			case expected.SecretContents != nil:
				data = expected.SecretContents.Reveal()
			}
			if err := n.writeFileAtomic(ctx, expected.Path, []byte(data), mode, uid, gid); err != nil {
				return err
			}
			log.Info("wrote file", "path", expected.Path, "bytes", len(data), "mode", mode)
			return nil
		}
		return n.chownChmod(ctx, p, expected, changes, uid, gid, mode)
	case TypeDirectory:
		mode := os.FileMode(0o755)
		if expected.Mode != nil {
			mode = *expected.Mode
		}
		if found == nil {
			if err := os.Mkdir(p, mode); err != nil {
				return fmt.Errorf("creating directory %s: %w", expected.Path, engine.FileError(err))
			}
			log.Info("created directory", "path", expected.Path)
			changes = expected // Mkdir honours the umask: set mode and owner as stated
		}
		return n.chownChmod(ctx, p, expected, changes, uid, gid, mode)
	default: // TypeSymlink
		if found != nil && changes.Target == nil {
			return n.chownChmod(ctx, p, expected, changes, uid, gid, 0)
		}
		tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		if err := os.Symlink(*expected.Target, tmp); err != nil {
			return fmt.Errorf("creating symlink %s: %w", expected.Path, engine.FileError(err))
		}
		defer os.Remove(tmp) // fails harmlessly once renamed
		if uid >= 0 || gid >= 0 {
			if err := os.Lchown(tmp, uid, gid); err != nil {
				return fmt.Errorf("creating symlink %s: %w", expected.Path, engine.FileError(err))
			}
		}
		if err := os.Rename(tmp, p); err != nil {
			return fmt.Errorf("creating symlink %s: %w", expected.Path, engine.FileError(err))
		}
		log.Info("wrote symlink", "path", expected.Path, "target", *expected.Target)
		return syncDir(filepath.Dir(p))
	}
}

// owner resolves the owner and group a task names (-1 for nil).
func (n *Node) owner(user, group *string) (uid, gid int, err error) {
	uid, gid = -1, -1
	if user != nil {
		if uid, err = n.idOf("/etc/passwd", *user); err != nil {
			return 0, 0, fmt.Errorf("field Owner: %w", err)
		}
	}
	if group != nil {
		if gid, err = n.idOf("/etc/group", *group); err != nil {
			return 0, 0, fmt.Errorf("field Group: %w", err)
		}
	}
	return uid, gid, nil
}

// chownChmod sets the owner, group and mode that changed, in place: chown first, since it clears setuid bits.
func (n *Node) chownChmod(ctx context.Context, p string, expected, changes *File, uid, gid int, mode os.FileMode) error {
	if (changes.Owner != nil || changes.Group != nil) && (uid >= 0 || gid >= 0) {
		if err := os.Lchown(p, uid, gid); err != nil {
			return fmt.Errorf("changing the owner of %s: %w", expected.Path, engine.FileError(err))
		}
		engine.Logger(ctx).Info("changed owner", "path", expected.Path, "uid", uid, "gid", gid)
	}
	if typeOf(expected) != TypeSymlink && (changes.Mode != nil || changes.Owner != nil || changes.Group != nil) {
		if err := n.chmodNode(expected.Path, mode); err != nil {
			return err
		}
		engine.Logger(ctx).Info("changed mode", "path", expected.Path, "mode", mode)
	}
	return nil
}
