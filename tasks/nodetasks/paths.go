package nodetasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"kubeup.dev/kubeup/engine"
)

// maxSymlinks bounds how many symbolic links one path may go through, as the kernel's ELOOP does.
const maxSymlinks = 40

// errEscapes is the error of a path that leaves the node root.
var errEscapes = errors.New("escapes the node root")

// hostPath returns where the node path p is, seen from this process: Root joined with p, after resolving every
// directory component of p under Root. A symbolic link is followed as the node would follow it: an absolute
// target starts again at Root, and ".." that would climb above Root is refused, as is ".." in p itself. The last
// component is never followed: a task that manages a symlink manages the link, and a rename replaces it. With
// mkdirs, missing directories are created (mode 0755).
func (n *Node) hostPath(p string, mkdirs bool) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("path %q: %w: it contains \"..\"", p, errEscapes)
		}
	}
	p = filepath.Clean(p)
	if p == "/" {
		return n.Root, nil
	}
	dir, base := filepath.Split(p)
	todo := splitPath(dir)
	var done []string // components of the resolved directory, below Root
	links, missing := 0, false
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", fmt.Errorf("path %s: %w through a symbolic link", p, errEscapes)
			}
			done = done[:len(done)-1]
			continue
		}
		if missing { // nothing below a missing directory exists: plain names
			done = append(done, c)
			continue
		}
		host := filepath.Join(n.Root, filepath.Join(done...), c)
		st, err := os.Lstat(host)
		switch {
		case errors.Is(err, fs.ErrNotExist) && mkdirs:
			if err := os.Mkdir(host, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("creating directory %s: %w", host, classify(err))
			}
			done = append(done, c)
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			done = append(done, c)
		case err != nil:
			return "", fmt.Errorf("resolving %s: %w", p, classify(err))
		case st.Mode().Type() == fs.ModeSymlink:
			if links++; links > maxSymlinks {
				return "", fmt.Errorf("resolving %s: too many levels of symbolic links", p)
			}
			target, err := os.Readlink(host)
			if err != nil {
				return "", fmt.Errorf("resolving %s: %w", p, classify(err))
			}
			if strings.HasPrefix(target, "/") {
				done = nil
			}
			todo = append(splitPath(target), todo...)
		case st.IsDir():
			done = append(done, c)
		default:
			return "", fmt.Errorf("resolving %s: %s is not a directory", p, "/"+filepath.Join(append(done, c)...))
		}
	}
	return filepath.Join(n.Root, filepath.Join(done...), base), nil
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

// writeAtomic replaces the file at host path path with what write writes: a temporary file in the same
// directory, given mode and owner (uid or gid -1: leave as created), synced, then renamed over path, and the
// directory synced. When write fails, nothing is left behind.
func writeAtomic(path string, mode os.FileMode, uid, gid int, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, classify(err))
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	err = write(tmp)
	if err == nil && (uid >= 0 || gid >= 0) {
		err = classify(tmp.Chown(uid, gid))
	}
	if err == nil {
		err = classify(tmp.Chmod(mode)) // after chown, which clears setuid bits
	}
	if err == nil {
		err = classify(tmp.Sync())
	}
	if cerr := tmp.Close(); err == nil {
		err = classify(cerr)
	}
	if err == nil {
		err = classify(os.Rename(tmp.Name(), path))
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return syncDir(dir)
}

// writeFileAtomic is writeAtomic with the whole content at hand.
func writeFileAtomic(path string, data []byte, mode os.FileMode, uid, gid int) error {
	return writeAtomic(path, mode, uid, gid, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, classify(err))
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing %s: %w", dir, classify(err))
	}
	return nil
}

// readFileIfExists returns the contents of the file at host path path, and false when there is none.
func readFileIfExists(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, classify(err)
	}
	return b, true, nil
}

// classify tells the engine how to treat a filesystem error: permission problems are access denied, a busy
// resource is worth another try, anything else is terminal.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", engine.ErrAccessDenied, err)
	case errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.EAGAIN):
		return engine.Retryable(err)
	}
	return err
}
