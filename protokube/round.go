package protokube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/kubetasks"
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
	// kube and approver reach this node's kube-apiserver (as protokube, as the CSR approver) while it is ready.
	kube, approver *kubetasks.Client
	// routes is the node's routing table (the pod network's routes); nil: the round leaves its routes alone.
	routes nodetasks.RouteTable
	// cloudTasks are the keys of the cloud's tasks the round holds (its pod routes, bound to the cloud's world):
	// they write nothing on the node.
	cloudTasks map[engine.Key]bool
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

// volumeMounted reports whether the volume attach attaches is the filesystem mounted at the node path
// mountPoint: the device the provider says it is attached as on this node, mounted there whole, with the UUID of
// its filesystem (nodetasks.Node.MountedAt). A volume not attached here is not. An error: it cannot be told now.
// The provider's answer is the one the round's attachment finds (Prefetch): no second call.
func (r *Round) volumeMounted(ctx context.Context, attach *volumetasks.Attach[*Round], mountPoint string) (bool, error) {
	dev, err := attach.Prefetch(ctx, r)
	if err != nil || dev == "" {
		return false, err
	}
	_, ok, err := r.node.MountedAt(mountPoint, dev)
	return ok, err
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

// A provider's format intents and mount guard are what the node's mounts use (nodetasks.NodeOptions).
var (
	_ nodetasks.FormatJournal = volumetasks.FormatIntents(nil)
	_ nodetasks.MountGuard    = volumetasks.MountGuard(nil)
)
