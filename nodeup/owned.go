package nodeup

import (
	"fmt"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// ownedUnits are the systemd units nodeup may install, stop or remove: the model's and its own.
var ownedUnits = append(slices.Clone(model.NodeupUnits), UnitName)

// ownedPath reports whether nodeup may write or remove the node path p: model.OwnedNodePath, or the binary
// --install-systemd-unit installs.
func ownedPath(p string) bool { return p == InstalledBinary || model.OwnedNodePath(p) }

// checkOwned refuses a graph that would write or remove anything kubeup does not own on the node, whatever the
// configuration it was built from says: every file, manifest and removal must be at a path ownedPath allows,
// every unit one of ownedUnits, and every task of a type nodeup knows. Validation refuses such a configuration
// before (its spec's paths are held to the same directories); this holds whatever a configuration or a change
// to the model slips past it. The error is a *ConfigError: nothing has been read or written yet.
func checkOwned(source string, g *engine.Graph[*nodetasks.Node]) error {
	var bad []string
	for _, t := range g.Tasks() {
		paths, isFile := nodetasks.WrittenPaths(t)
		var unit string
		switch t := t.(type) {
		case *nodetasks.SystemdService:
			unit = t.Name
		case *nodetasks.AbsentService:
			unit = t.Name
		case *Executable:
			paths = []string{t.Path}
		case *nodetasks.ImageImport:
			continue // an image in containerd's store: containerd writes it, in its own directories
		case *nodetasks.PodMasquerade[*nodetasks.Node]:
			continue // kubeup's own nftables table (nodetasks.NFTablesTable) only, no file
		default:
			if !isFile {
				bad = append(bad, fmt.Sprintf("%s: a task nodeup does not know what it writes", t.Key()))
				continue
			}
		}
		if unit != "" && !slices.Contains(ownedUnits, unit) {
			bad = append(bad, fmt.Sprintf("%s: unit %s is not one of kubeup's (%s)", t.Key(), unit, strings.Join(ownedUnits, ", ")))
		}
		for _, p := range paths {
			if !ownedPath(p) {
				bad = append(bad, fmt.Sprintf("%s: %s is not in a directory kubeup owns", t.Key(), p))
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	dirs := append(slices.Clone(model.SpecNodeDirs), model.KubeupStateDir)
	return &ConfigError{Err: fmt.Errorf("%s: nodeup refuses to touch what kubeup does not own on a node: %s; kubeup writes only below %s, the files %s and the units %s",
		source, strings.Join(bad, "; "), strings.Join(dirs, ", "), strings.Join(append(slices.Clone(model.NodeupFiles), InstalledBinary), ", "), strings.Join(ownedUnits, ", "))}
}
