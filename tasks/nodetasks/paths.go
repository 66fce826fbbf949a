package nodetasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/engine"
)

// maxSymlinks bounds how many symbolic links one path may go through, as the kernel's ELOOP does.
const maxSymlinks = 40

// errEscapes is the error of a path that leaves the node root.
var errEscapes = errors.New("escapes the node root")

// A node path is resolved inside Node.Root as a chroot would resolve it, so that nothing a task reads, writes or
// mounts is outside the root:
//   - an absolute symbolic link target is a path on the node: it starts again at Root (systemctl's enable links,
//     /etc/localtime and /var/run -> /run in every root filesystem are absolute, and the node itself, booted
//     from that tree or running in that namespace, reads them so);
//   - a target whose ".." would climb above Root points outside the node: an error that names the link and its
//     target (a chroot would stop at its root, but such a link was made for another root, most likely the host's,
//     and following it anywhere would read or write what the operator did not mean);
//   - ".." in a task's own path is refused: the tasks' paths are absolute and clean.
// The resolution is a walk in user space (for these errors), then the file is opened with openat2(2) under
// RESOLVE_IN_ROOT and RESOLVE_NO_SYMLINKS from a descriptor of Root, so that a link swapped in between cannot lead
// outside either.

// link is a symbolic link met while resolving a path: its node path and its target.
type link struct{ path, target string }

// hostPath returns where the node path p is, seen from this process: Root joined with p, after resolving every
// directory component of p under Root (see above). The last component is never followed: a task that manages a
// symlink manages the link, and a rename replaces it. With mkdirs, missing directories are created (mode 0755).
func (n *Node) hostPath(p string, mkdirs bool) (string, error) {
	rel, err := n.resolve(p, false, mkdirs)
	if err != nil {
		return "", err
	}
	return filepath.Join(n.Root, rel), nil
}

// resolve returns the node path p resolved under Root, relative to Root ("." for the root itself), with no
// symbolic link and no ".." left in it. followLast says whether a symbolic link in the last component is followed
// too (reads and mounts), or is the object itself (a task that manages it, a rename over it). With mkdirs,
// missing directories are created (mode 0755), the last component excepted.
func (n *Node) resolve(p string, followLast, mkdirs bool) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", engine.Terminal(fmt.Errorf("path %q is not absolute", p))
	}
	if strings.ContainsRune(p, 0) {
		return "", engine.Terminal(fmt.Errorf("path %q contains a NUL byte", p))
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", engine.Terminal(fmt.Errorf("path %q: %w: it contains \"..\"", p, errEscapes))
		}
	}
	if rel, ok := n.resolveDirect(p, followLast); ok {
		return rel, nil
	}
	return n.resolveWalk(p, followLast, mkdirs)
}

// resolveWalk is resolve's walk, one component at a time, for a path resolve checked.
func (n *Node) resolveWalk(p string, followLast, mkdirs bool) (string, error) {
	type component struct {
		name string
		via  *link // the link whose target this component comes from; nil: from p
	}
	var todo []component
	for _, c := range splitPath(p) {
		todo = append(todo, component{name: c})
	}
	var done []string // components of the resolved path, below Root
	links, missing := 0, false
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		last := len(todo) == 0
		switch c.name {
		case ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", engine.Terminal(fmt.Errorf("path %s: the symbolic link %s -> %s %w %s: kubeup follows links only inside it: "+
					"make the link point to a path inside the root (an absolute target is read from the root), or remove it",
					p, c.via.path, c.via.target, errEscapes, n.Root))
			}
			done = done[:len(done)-1]
			continue
		}
		if missing || (last && !followLast) { // nothing below a missing directory exists: plain names
			done = append(done, c.name)
			continue
		}
		nodePath := "/" + path.Join(append(done, c.name)...)
		host := filepath.Join(n.Root, filepath.FromSlash(nodePath))
		st, err := os.Lstat(host)
		switch {
		case errors.Is(err, fs.ErrNotExist) && mkdirs && !last:
			if err := os.Mkdir(host, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("creating directory %s: %w", nodePath, engine.FileError(err))
			}
			done = append(done, c.name)
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			done = append(done, c.name)
		case err != nil:
			return "", fmt.Errorf("resolving %s: %w", p, engine.FileError(err))
		case st.Mode().Type() == fs.ModeSymlink:
			if links++; links > maxSymlinks {
				return "", engine.Terminal(fmt.Errorf("resolving %s: too many levels of symbolic links", p))
			}
			target, err := os.Readlink(host)
			if err != nil {
				return "", fmt.Errorf("resolving %s: %w", p, engine.FileError(err))
			}
			if strings.HasPrefix(target, "/") {
				done = nil
			}
			l := &link{path: nodePath, target: target}
			var expanded []component
			for _, t := range splitPath(target) {
				expanded = append(expanded, component{name: t, via: l})
			}
			todo = append(expanded, todo...)
		case st.IsDir() || last:
			done = append(done, c.name)
		default:
			return "", engine.Terminal(fmt.Errorf("resolving %s: %s is not a directory: remove it, or move it out of the way", p, nodePath))
		}
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// resolveDirect is resolve's shortcut for what nearly every path of a converged node is: clean, with every
// component there and no symbolic link on the way (nor at the end, when followLast). One openat2(2) under
// RESOLVE_NO_SYMLINKS proves it, and then the walk would return the path as it is. ok is false for anything
// else (a link, something missing, an error): the walk decides, with its errors.
func (n *Node) resolveDirect(p string, followLast bool) (rel string, ok bool) {
	if p == "/" {
		return ".", true
	}
	if !directPath(p) {
		return "", false
	}
	flags := unix.O_PATH
	if !followLast {
		flags |= unix.O_NOFOLLOW // the link itself, as the walk leaves it
	}
	fd, err := n.openInRoot(p[1:], flags, 0)
	if err != nil {
		return "", false
	}
	unix.Close(fd)
	return p[1:], true
}

// directPath says whether the node path p may be opened as it is, relative to the root (p[1:]), when nothing on
// the way is a symbolic link: absolute, clean, not the root itself, without a NUL byte.
func directPath(p string) bool {
	return len(p) > 1 && p[0] == '/' && path.Clean(p) == p && !strings.ContainsRune(p, 0)
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// openResolved opens rel, a path that resolve returned, below Root: with openat2(2) from a descriptor of Root,
// RESOLVE_IN_ROOT and RESOLVE_NO_SYMLINKS, so that even a path changed since it was resolved cannot lead out of
// the root (a symbolic link that appeared in between is an error, worth another try). Where openat2 is missing,
// it walks rel one component at a time with O_NOFOLLOW, which holds as well for a path without "..".
func (n *Node) openResolved(rel string, flags int, mode uint32) (*os.File, error) {
	fd, err := n.openResolvedFD(rel, flags, mode)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(n.Root, filepath.FromSlash(rel))), nil
}

// openResolvedFD is openResolved's descriptor.
func (n *Node) openResolvedFD(rel string, flags int, mode uint32) (int, error) {
	fd, err := n.openInRoot(rel, flags, mode)
	var rootErr *rootError
	switch {
	case errors.As(err, &rootErr):
		return -1, fmt.Errorf("opening the node root %s: %w", n.Root, engine.FileError(rootErr.err))
	case err == unix.ELOOP:
		return -1, engine.Retryable(fmt.Errorf("opening %s: a symbolic link appeared while kubeup resolved it: %w",
			filepath.Join(n.Root, filepath.FromSlash(rel)), err))
	case err != nil:
		return -1, &fs.PathError{Op: "open", Path: filepath.Join(n.Root, filepath.FromSlash(rel)), Err: err}
	}
	return fd, nil
}

// rootError is the error of opening the node root itself.
type rootError struct{ err error }

func (e *rootError) Error() string { return e.err.Error() }
func (e *rootError) Unwrap() error { return e.err }

// openInRoot is openResolved's open: the descriptor, or the system's error as it is (a *rootError when the root
// itself cannot be opened).
func (n *Node) openInRoot(rel string, flags int, mode uint32) (int, error) {
	root, err := n.rootFD()
	if err != nil {
		return -1, &rootError{err}
	}
	how := &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS,
	}
	var fd int
	for range 10 {
		fd, err = unix.Openat2(root, rel, how)
		if err != unix.EAGAIN && err != unix.EINTR { // EAGAIN: a rename raced with the lookup
			break
		}
	}
	if err == unix.ENOSYS || err == unix.EPERM { // no openat2, or a seccomp filter that denies it: walk
		fd, err = openBeneath(root, rel, flags, mode)
	}
	return fd, err
}

// openBeneath opens rel below the directory dirfd one component at a time, following no symbolic link: rel must
// hold no "..".
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	comps := splitPath(rel)
	if len(comps) == 0 || rel == "." {
		return unix.Openat(dirfd, ".", flags|unix.O_CLOEXEC, mode)
	}
	cur := dirfd
	for i, c := range comps {
		if c == ".." {
			return -1, unix.EXDEV
		}
		var fd int
		var err error
		if i == len(comps)-1 {
			fd, err = unix.Openat(cur, c, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		} else {
			fd, err = unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

// openNodeFile opens the regular file at node path p for reading, resolved inside the root; followLast says
// whether a symbolic link at p is followed (inside the root). A FIFO or a device is refused, not opened for a read
// that could block or never end.
func (n *Node) openNodeFile(p string, followLast bool) (*os.File, error) {
	fd, _, err := n.openNodeFD(p, followLast)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(n.Root, p)), nil
}

// openNodeFD is openNodeFile's descriptor, with the file's size.
func (n *Node) openNodeFD(p string, followLast bool) (fd int, size int64, err error) {
	const flags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	fd = -1
	// The common case first, as resolveDirect: a clean path, there, without a link on the way. Opened under
	// RESOLVE_NO_SYMLINKS, it is what resolve and openResolved would open; anything else takes them, with their
	// errors.
	if directPath(p) {
		if d, err := n.openInRoot(p[1:], flags, 0); err == nil {
			fd = d
		}
	}
	if fd < 0 {
		rel, err := n.resolve(p, followLast, false)
		if err != nil {
			return -1, 0, err
		}
		if fd, err = n.openResolvedFD(rel, flags, 0); err != nil {
			return -1, 0, engine.FileError(err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, engine.FileError(&fs.PathError{Op: "stat", Path: filepath.Join(n.Root, p), Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, 0, engine.Terminal(fmt.Errorf("%s is a %s, not a regular file", p, statOfSys(&st).typ))
	}
	return fd, st.Size, nil
}

// lstatNode is what is at the node path p, resolved as hostPath resolves it (a symbolic link at p is the link);
// ok is false when there is nothing.
func (n *Node) lstatNode(p string) (st *fileStat, ok bool, err error) {
	if directPath(p) {
		if fd, err := n.openInRoot(p[1:], unix.O_PATH|unix.O_NOFOLLOW, 0); err == nil {
			var sys unix.Stat_t
			err := unix.Fstat(fd, &sys)
			unix.Close(fd)
			if err == nil {
				return statOfSys(&sys), true, nil
			}
		}
	}
	host, err := n.hostPath(p, false)
	if err != nil {
		return nil, false, err
	}
	fi, err := os.Lstat(host)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, engine.FileError(err)
	}
	return statOf(fi), true, nil
}

// readNodeFile returns the contents of the file at node path p, a symbolic link there followed inside the root;
// false when there is none.
func (n *Node) readNodeFile(p string) ([]byte, bool, error) {
	got, _, ok, err := n.readNodeFileComparing(p, "")
	if err != nil || !ok {
		return nil, false, err
	}
	return []byte(got), true, nil
}

// readNodeFileComparing is readNodeFile for a file whose contents are compared with want: same says it holds
// want's bytes, and then nothing is copied; else got holds them. ok is false when there is no file.
func (n *Node) readNodeFileComparing(p, want string) (got string, same, ok bool, err error) {
	fd, size, err := n.openNodeFD(p, true)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, false, nil
	}
	if err != nil {
		return "", false, false, err
	}
	defer unix.Close(fd)
	got, same, err = readComparing(fd, size, want)
	if err != nil {
		return "", false, false, fmt.Errorf("reading %s: %w", p, engine.FileError(err))
	}
	return got, same, true, nil
}

// chmodNode sets the mode of the file or directory at node path p in place, through a descriptor: a symbolic link
// there is not followed (chmod(2) would follow it, out of the root too), it is an error.
func (n *Node) chmodNode(p string, mode os.FileMode) error {
	rel, err := n.resolve(p, false, false)
	if err != nil {
		return err
	}
	f, err := n.openResolved(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("changing the mode of %s: %w", p, engine.FileError(err))
	}
	defer f.Close()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("changing the mode of %s: %w", p, engine.FileError(err))
	}
	return nil
}
