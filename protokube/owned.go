package protokube

import (
	"fmt"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// checkOwned refuses a round's graph that would write or remove anything on the node outside what kubeup owns
// there (model.OwnedNodePath) and the etcd volumes' mount points (model.InEtcdMount), or touch a unit that is
// not kubeup's, whatever the node configuration says: protokube converges the node's files each round as
// nodeup does, and holds them to the same directories nodeup does (nodeup's checkOwned). Validation refuses
// such a configuration first; this holds whatever a configuration written by hand slips past it. Nothing has
// been written when it refuses. The tasks of cloud (keys) are the cloud's, bound to its world: they write nothing
// on the node.
func checkOwned(source string, g *engine.Graph[*Round], cloud map[engine.Key]bool) error {
	var bad []string
	for _, t := range g.Tasks() {
		if ps, ok := nodetasks.WrittenPaths(t); ok {
			for _, p := range ps {
				if !model.OwnedNodePath(p) && !model.InEtcdMount(p) {
					bad = append(bad, fmt.Sprintf("%s: %s is not in a directory kubeup owns", t.Key(), p))
				}
			}
			continue
		}
		if cloud[t.Key()] {
			continue
		}
		switch t := t.(type) {
		case *nodetasks.FormatAndMount:
			if !model.InEtcdMount(t.MountPoint) {
				bad = append(bad, fmt.Sprintf("%s: %s is not an etcd volume's mount point (/mnt/master-<volume>)", t.Key(), t.MountPoint))
			}
		case *nodetasks.SystemdService:
			if !slices.Contains(model.NodeupUnits, t.Name) {
				bad = append(bad, fmt.Sprintf("%s: unit %s is not one of kubeup's (%s)", t.Key(), t.Name, strings.Join(model.NodeupUnits, ", ")))
			}
		case *nodetasks.ImageImport:
			continue // an image in containerd's store: containerd writes it, in its own directories
		case *volumetasks.Attach[*Round], *volumetasks.Detach[*Round],
			*dnstasks.Record[*Round], *dnstasks.Withdrawn[*Round], *dnstasks.Shared[*Round]:
			continue // the cloud's volumes and DNS: nothing on the node's filesystem
		case *kubetasks.Object[*Round], *kubetasks.Pruned[*Round], *kubetasks.KubeletCSRs[*Round]:
			continue // the cluster's API: objects and certificate requests, nothing on the node
		case *nodetasks.PodRoutes[*Round]:
			continue // routes of kubeup's protocol (nodetasks.RouteProtocol) only, no file
		case *nodetasks.PodMasquerade[*nodetasks.Node]:
			continue // kubeup's own nftables table (nodetasks.NFTablesTable) only, no file
		default:
			bad = append(bad, fmt.Sprintf("%s: a task protokube does not know what it writes", t.Key()))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s: protokube refuses to touch what kubeup does not own on a node: %s; kubeup writes only below %s, %s<volume> and the files %s",
		source, strings.Join(bad, "; "), strings.Join(append(slices.Clone(model.SpecNodeDirs), model.KubeupStateDir), ", "), model.EtcdMountPoint(""), strings.Join(model.NodeupFiles, ", "))
}

// ownedHostsFile refuses a hosts file (spec.local.dns.hostsFile) that is neither /etc/hosts, the one system
// file kubeup edits (its managed block only), nor in a directory kubeup owns.
func ownedHostsFile(source, p string) error {
	if p == model.DefaultHostsFile || model.OwnedNodePath(p) {
		return nil
	}
	return fmt.Errorf("%s: spec.local.dns.hostsFile: protokube refuses to edit %q: it is neither %s nor in a directory kubeup owns (%s)",
		source, p, model.DefaultHostsFile, strings.Join(model.SpecNodeDirs, ", "))
}
