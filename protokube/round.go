package protokube

import (
	"fmt"
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

	mountPoints map[string]bool // what the kernel's mount table shows mounted, read once (see mounted)
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

// mounted reports whether something is mounted at the node path mountPoint, by the kernel's mount table: read
// once per round (the first time a round asks), as the round began, which is what buildGraph decides by.
func (r *Round) mounted(mountPoint string) (bool, error) {
	if r.mountPoints == nil {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return false, err
		}
		r.mountPoints = map[string]bool{}
		for line := range strings.Lines(string(b)) {
			// ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ...: the fifth field, escaped as proc(5) says.
			f := strings.Fields(line)
			if len(f) > 4 {
				r.mountPoints[mountinfo.Unescape(f[4])] = true
			}
		}
	}
	return r.mountPoints[filepath.Join(r.node.Root, mountPoint)], nil
}

// bootstrapped reports whether the etcd data directory (a node path) holds a member that has bootstrapped: a
// write-ahead log in <data dir>/member/wal. etcd then restarts from it and ignores --initial-cluster-state. A
// member directory without a log is an etcd that stopped during its first start: it must bootstrap again, as a
// new cluster's member.
func (r *Round) bootstrapped(dataDir string) (bool, error) {
	logs, err := filepath.Glob(filepath.Join(r.node.Root, dataDir, "member", "wal", "*.wal"))
	if err != nil {
		return false, fmt.Errorf("etcd data directory %s: %w", dataDir, err)
	}
	return len(logs) > 0, nil
}

// startedNew reports whether the etcd manifest at the node path manifest runs etcd with
// --initial-cluster-state=new. Once its member has bootstrapped, the flag is ignored: keeping it saves a restart
// of etcd for a flag it does not read.
func (r *Round) startedNew(manifest string) bool {
	b, err := os.ReadFile(filepath.Join(r.node.Root, manifest))
	return err == nil && strings.Contains(string(b), "--initial-cluster-state=new")
}
