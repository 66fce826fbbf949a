package nodeup

import (
	"fmt"
	"os"
	"strconv"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// Where --install-systemd-unit installs nodeup on the node.
const (
	// UnitName is the oneshot unit that runs nodeup at every boot.
	UnitName = "kubeup-nodeup.service"
	// InstalledBinary is where nodeup copies itself for the unit to run.
	InstalledBinary = "/usr/local/bin/nodeup"
)

// addSelfUnit adds to g the tasks that make nodeup run at every boot: the running binary copied to
// InstalledBinary, and the oneshot unit that runs it with the same configuration (self.unit). The unit is
// enabled but not started: this run is converging the node already. It is not pinned to a configuration's sha256
// (--conf-sha256 is the first boot's): a later boot converges the node to the configuration in the store.
func addSelfUnit(g *engine.Graph[*nodetasks.Node], self *selfInstall) {
	engine.Add(g, &Executable{Path: InstalledBinary, Source: self.executable, SHA256: self.sha256, Mode: ptr(os.FileMode(0o755))})
	engine.Add(g, &nodetasks.SystemdService{
		Name:       UnitName,
		Definition: ptr(self.unit),
		Enabled:    ptr(true),
	})
}

// selfUnitDefinition is the unit that runs nodeup with conf at boot: after the network is up, once, and reported
// active afterwards so that `systemctl status` shows how the last run went. Its command line is written by the
// model's rules for units (model.ExecLine): systemd reads back exactly conf, whatever it holds (a quote, "%",
// "$", a carriage return or another control character is escaped, never a new line of the unit); a conf that
// no unit can hold is an error.
func selfUnitDefinition(conf string, retries int, nodeID string) (string, error) {
	args := []string{InstalledBinary, "--conf=" + conf}
	if retries != 0 {
		args = append(args, "--retries="+strconv.Itoa(retries))
	}
	if nodeID != "" { // the machine keeps the id it was given at every boot (its record on the local provider)
		args = append(args, "--node-id="+nodeID)
	}
	exec, err := model.ExecLine(args...)
	if err != nil {
		return "", fmt.Errorf("--install-systemd-unit: --conf %q cannot be written into %s: %w; nothing was changed", conf, UnitName, err)
	}
	return `# Managed by kubeup (nodeup --install-systemd-unit): runs nodeup at every boot.
[Unit]
Description=kubeup nodeup: converge this node to its configuration
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=` + exec + `

[Install]
WantedBy=multi-user.target
`, nil
}
