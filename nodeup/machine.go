package nodeup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"kubeup.dev/kubeup/internal/atomicfile"
	"kubeup.dev/kubeup/model"
)

// The local provider has no machine API: its machines are directories (and network namespaces) of one host that
// the operator runs nodeup and protokube on. So that `kubeup rolling-update cluster` knows them, nodeup records
// each machine of a local-provider cluster it converges in the machines directory beside the volume pool:
//
//	<dir of spec.local.poolDir>/machines/<cluster>/<node id>.json
//
// (<store>-local/machines/<cluster>/ beside a file:// state store). The record is what kubeup needs to tell
// whether the machine runs its group's current configuration and to converge it again: its group, its root, the
// sha256 of the configuration this run converged it to and the nodeup binary that did. kubeup reads these fields
// by name (cloudup/rolling_local.go): keep them in step.

// LocalMachine is the record of one machine of the local provider.
type LocalMachine struct {
	// NodeID is the machine's id, protokube's --node-id on it: the name its volume claims carry.
	NodeID        string `json:"nodeID"`
	Cluster       string `json:"cluster"`
	InstanceGroup string `json:"instanceGroup"`
	Role          string `json:"role"`
	Zone          string `json:"zone,omitempty"`
	// Root is the machine's filesystem root (nodeup's --root), absolute.
	Root string `json:"root"`
	// Conf is the --conf this run read.
	Conf string `json:"conf"`
	// Nodeup is the nodeup binary that converged the machine, which kubeup runs again.
	Nodeup string `json:"nodeup"`
	// Systemd says a systemd ran in Root: nodeup restarted protokube.service there when its configuration
	// changed. Without one, protokube runs as the operator started it and takes the new configuration in its
	// next round (it reads Root/etc/kubeup/node.conf each round).
	Systemd bool `json:"systemd"`
	// ConfigSHA256 is the sha256 of the node configuration this run converged the machine to (its first line).
	ConfigSHA256 string `json:"configSHA256"`
	// Converged is when the run ended.
	Converged time.Time `json:"converged"`
}

// checkNodeID refuses a --node-id that is not a plain name (model.ValidNodeID), before anything is changed:
// nodeup records the machine under it, and `kubeup rolling-update` prints it.
func (o *Options) checkNodeID() error {
	if o.NodeID == "" {
		return nil
	}
	if err := model.ValidNodeID(o.NodeID); err != nil {
		return &ConfigError{Err: fmt.Errorf("--node-id: %w", err)}
	}
	return nil
}

// LocalMachinesDir is where the machines of the local provider whose volumes are in poolDir are recorded.
func LocalMachinesDir(poolDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(poolDir)), "machines")
}

// recordMachine is how nodeup records the machine it converged where the cluster's cloud does not (kubeup's
// rolling-update finds its machines there), by spec.cloudProvider: the local provider's machines
// (recordLocalMachine). A cloud's own machines (aws, gce) need no record.
var recordMachine = map[string]func(o *Options, nc *model.NodeConfig, conf []byte, root string, systemd bool) error{
	model.CloudLocal: (*Options).recordLocalMachine,
}

// recordLocalMachine records the machine nodeup just converged, when its cluster is on the local provider and its
// volume pool is on this host: see LocalMachine. conf is the configuration object nodeup read (its first line holds its sha256).
func (o *Options) recordLocalMachine(nc *model.NodeConfig, conf []byte, root string, systemd bool) error {
	c, ig := nc.Cluster, nc.InstanceGroup
	if c.Spec.Local == nil || c.Spec.Local.PoolDir == "" {
		return nil
	}
	// Only a machine of this host's pool is recorded: kubeup, on the host of the pool, reaches it. A machine
	// whose pool is elsewhere (nodeup run in an image, or on another host) is not one of this host's.
	if st, err := os.Stat(filepath.FromSlash(c.Spec.Local.PoolDir)); err != nil || !st.IsDir() {
		o.Logger.Debug("the pool is not on this host: the machine is not recorded", "poolDir", c.Spec.Local.PoolDir)
		return nil
	}
	sum, err := model.NodeConfigObjectSHA256(o.Conf, conf)
	if err != nil {
		return err
	}
	id := o.NodeID
	if id == "" {
		if id, err = os.Hostname(); err != nil {
			return fmt.Errorf("--node-id is not set and the host name cannot be read: %w", err)
		}
	}
	if err := model.ValidNodeID(id); err != nil {
		return fmt.Errorf("the machine is recorded under its node id, the host name without --node-id: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the nodeup binary: %w", err)
	}
	m := LocalMachine{
		NodeID: id, Cluster: c.Metadata.Name, InstanceGroup: ig.Metadata.Name, Role: ig.Spec.Role, Root: root,
		Conf: o.Conf, Nodeup: exe, Systemd: systemd, ConfigSHA256: sum, Converged: time.Now().UTC(),
	}
	if len(ig.Spec.Zones) > 0 {
		m.Zone = ig.Spec.Zones[0]
	}
	dir := filepath.Join(LocalMachinesDir(c.Spec.Local.PoolDir), c.Metadata.Name)
	path := filepath.Join(dir, id+".json")
	if b, err := os.ReadFile(path); err == nil {
		var old LocalMachine
		if json.Unmarshal(b, &old) == nil && old.Root != "" && old.Root != root {
			o.Logger.Warn("another machine was recorded under this node id: its record is replaced (give each machine its own --node-id)",
				"nodeID", id, "record", path, "formerRoot", old.Root, "root", root)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("making the machines directory: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("recording the machine in %s: %w", path, err)
	}
	o.Logger.Info("recorded the local machine for kubeup rolling-update", "record", path, "nodeID", id, "configSHA256", sum)
	return nil
}
