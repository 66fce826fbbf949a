package protokube

import (
	"context"
	"log/slog"
	"os"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// apiTTL is the TTL of the records protokube publishes: short, so that clients follow a control plane that
// moved within a minute.
const apiTTL = 60

// contestedWait is how long a round waits for the other nodes to detach a volume this node won but that is
// attached to them too (they do at their next round): then the round fails, and the next one waits again.
const contestedWait = 3 * time.Minute

// buildGraph returns the graph of one round: the node's tasks (kubelet started), and for each etcd cluster
// either the member volume this node holds (attach, format if blank, mount, the etcd manifest once mounted, the
// member's DNS name) or the absence of its manifest, and this node's address withdrawn from the names of the
// members it does not serve; and this node's part of the API's names (addAPIRecords), by api: nil when its
// kube-apiserver is ready (apiReady), else why not.
func buildGraph(ctx context.Context, r *Round, nc *model.NodeConfig, me volumetasks.Holder, ch *choice, api error, log *slog.Logger) (*engine.Graph[*Round], error) {
	pc := nc.Protokube
	g := engine.NewGraph[*Round]()
	keystoreFiles, err := nodegraph.AddNodeTasks(g, (*Round).Node, nc, nodegraph.NodeTasksOptions{StartKubelet: true, LeaveNodeConf: true, LeaveAssets: true})
	if err != nil {
		return nil, err
	}
	for i := range pc.EtcdClusters {
		ec := &pc.EtcdClusters[i]
		manifest := model.EtcdManifestPath(nc, ec.Name)
		mv, ok := ch.mine[ec.Name]
		// A node withdraws its address from the names of the members it does not serve (any more): a name
		// follows its member to the node that holds its volume, and never points at one that does not.
		for _, m := range ec.Members {
			if (!ok || m.Name != mv.member.Name) && me.InternalIP != "" {
				engine.Add(g, &dnstasks.Withdrawn[*Round]{Name: m.DNSName, Type: "A", Value: me.InternalIP})
			}
		}
		if !ok {
			engine.AddIn(g, (*Round).Node, &nodetasks.Absent{Path: manifest})
			continue
		}
		attach := addAttach(g, mv)
		mountPoint := model.EtcdMountPoint(mv.volume.ID)
		mount := engine.AddIn(g, (*Round).Node, &nodetasks.FormatAndMount{MountPoint: mountPoint, Attachment: attach, Volume: mv.volume.ID})
		// The manifest is written only while this very volume is mounted at its mount point, as the round began:
		// etcd must never start on the node's own disk, nor on whatever else is mounted there, and whether its
		// data directory holds a member is known only then. Otherwise it is removed: an earlier round's manifest
		// would keep etcd running on what is mounted there now. When that cannot be told (the provider does not
		// answer: the round's attachment reports it), the manifest is left as it is. A round that mounted a
		// volume is followed by another at once (see Run).
		mounted, err := r.volumeMounted(ctx, attach, mountPoint)
		if err != nil {
			log.Warn("the etcd manifest is left as it is: whether its volume is mounted cannot be told", "etcdCluster", ec.Name, "volume", mv.volume.ID, "err", err)
			continue
		}
		if !mounted {
			engine.AddIn(g, (*Round).Node, &nodetasks.Absent{Path: manifest})
			continue
		}
		dataDir := model.EtcdDataDir(mountPoint)
		// A member that bootstrapped joins its cluster ("existing": a volume moved here from a dead node);
		// one that did not starts a new cluster with the others. etcd reads the flag only on its first start:
		// a manifest that started it as new keeps saying so, rather than restart etcd for nothing.
		bootstrapped, err := r.bootstrapped(dataDir)
		if err != nil {
			return nil, err
		}
		existing := bootstrapped && !r.startedNew(manifest)
		data := engine.AddIn(g, (*Round).Node, &nodetasks.File{
			Path: dataDir, Type: ptr(nodetasks.TypeDirectory), Mode: ptr(os.FileMode(0o700)), After: []engine.Task{mount},
		})
		pod := nodegraph.EtcdPod(pc, *ec, *mv.member, dataDir, existing)
		engine.AddIn(g, (*Round).Node, &nodetasks.ManifestFile{Path: manifest, Pod: pod, After: append([]engine.Task{mount, data}, keystoreFiles...)})
		if me.InternalIP != "" {
			engine.Add(g, &dnstasks.Record[*Round]{Name: mv.member.DNSName, Type: "A", TTL: ptr(apiTTL), Values: []string{me.InternalIP}})
		}
	}
	addDetaches(g, ch)
	addAPIRecords(g, pc, me, ch, api)
	return g, nil
}

// addAttach adds the attachment of a member volume this node holds or claims. One attached to other nodes too,
// which this node won, waits contestedWait for them to detach it before the round fails: nothing formats or
// mounts it until they did.
func addAttach(g *engine.Graph[*Round], mv memberVolume) *volumetasks.Attach[*Round] {
	var opts []engine.AddOption
	if len(mv.volume.AlsoAttached) > 0 {
		opts = append(opts, engine.WithDeadline(contestedWait))
	}
	return engine.Add(g, &volumetasks.Attach[*Round]{VolumeID: mv.volume.ID}, opts...)
}

// addDetaches adds the detachment of each member volume this node is attached to but lost to another node: the
// provider detaches it only while nothing here uses it (volumetasks.Detach).
func addDetaches(g *engine.Graph[*Round], ch *choice) {
	for _, mv := range ch.lost {
		engine.Add(g, &volumetasks.Detach[*Round]{VolumeID: mv.volume.ID})
	}
}

func ptr[T any](v T) *T { return &v }
