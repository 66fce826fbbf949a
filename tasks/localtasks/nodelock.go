package localtasks

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
)

// LockNode takes the pool's lock of the node id, held until the returned file is closed (or the process ends):
// a claim says which node holds a volume by its id alone, so two protokubes that run as one node (two nodes
// that share a host name, the default id, such as network namespaces of one machine) would both take the same
// volumes as theirs, and mount them twice. The second is refused, with a terminal error that names the node,
// until the first ends. The lock is an exclusive flock(2) on <pool>/.node-<sha256 of id>.lock, which holds the id.
func (p *Pool) LockNode(id string) (*os.File, error) {
	if id == "" {
		return nil, engine.Terminal(errors.New("the node has no id: protokube needs --node-id (or a host name) to claim volumes"))
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("volume pool %s: %w", p.dir, engine.FileError(err))
	}
	path := p.nodeLockPath(id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the lock of node %q in volume pool %s: %w", id, p.dir, engine.FileError(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, engine.Terminal(fmt.Errorf("another process runs as node %q with volume pool %s (it holds %s): "+
				"two nodes with one id would both take the same volumes as theirs and mount them twice, so this one claims nothing; "+
				"give each node its own --node-id", id, p.dir, path))
		}
		return nil, fmt.Errorf("the lock of node %q in volume pool %s: %w", id, p.dir, err)
	}
	// For whoever looks at the file: the id it is the lock of.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(id+"\n"), 0)
	}
	return f, nil
}

// nodeLockPath is the path of node id's lock in the pool.
func (p *Pool) nodeLockPath(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(p.dir, ".node-"+hex.EncodeToString(sum[:8])+".lock")
}

// RemoveNodeLock removes the lock file of node id (see LockNode) unless a process holds it: what deleting a
// cluster does for its nodes. It reports whether the file was removed; none is not an error.
func (p *Pool) RemoveNodeLock(id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	path := p.nodeLockPath(id)
	removed, err := atomicfile.RemoveIfUnlocked(path)
	if err != nil {
		return false, fmt.Errorf("removing the lock of node %q (%s): %w", id, path, engine.FileError(err))
	}
	return removed, nil
}
