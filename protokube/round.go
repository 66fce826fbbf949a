package protokube

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"kubeup.dev/kubeup/internal/mountinfo"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// Round is the world of one round: this node, and the cloud's volumes and DNS as this node reaches them. The
// round's graph holds tasks of each part: node tasks through engine.AddIn(g, (*Round).Node, ...), volume and
// DNS tasks directly (Round is a volumetasks.World and a dnstasks.World).
type Round struct {
	node    *nodetasks.Node
	volumes volumetasks.Provider
	dns     dnstasks.Provider
}

var (
	_ volumetasks.World = (*Round)(nil)
	_ dnstasks.World    = (*Round)(nil)
)

// Node is the node part of the round's world.
func (r *Round) Node() *nodetasks.Node { return r.node }

// VolumeProvider is the cloud's volumes, as this node claims and attaches them.
func (r *Round) VolumeProvider() volumetasks.Provider { return r.volumes }

// DNSProvider is where the round publishes the etcd members' and the API's names.
func (r *Round) DNSProvider() dnstasks.Provider { return r.dns }

// mounted reports whether something is mounted at the node path mountPoint, by the kernel's mount table.
func (r *Round) mounted(mountPoint string) (bool, error) {
	want := filepath.Join(r.node.Root, mountPoint)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && mountinfo.Unescape(fields[4]) == want {
			return true, nil
		}
	}
	return false, sc.Err()
}

// holdsMember reports whether the etcd data directory (a node path) already holds a member: etcd keeps it in
// <data dir>/member. Then etcd joins the cluster it belongs to; otherwise it starts a new one.
func (r *Round) holdsMember(dataDir string) (bool, error) {
	_, err := os.Stat(filepath.Join(r.node.Root, dataDir, "member"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("etcd data directory %s: %w", dataDir, err)
}
