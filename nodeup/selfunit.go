package nodeup

import (
	"context"
	"errors"
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
// InstalledBinary, and the oneshot unit that runs it with the same configuration. The unit is enabled but not
// started: this run is converging the node already. It is not pinned to a configuration's sha256 (--conf-sha256
// is the first boot's): a later boot converges the node to the configuration in the store.
//
// A conf that no unit can hold (not UTF-8, a NUL byte: see model.ExecLine) adds a refusedUnit instead, whose
// Validate stops the whole run before anything on the node changed.
func addSelfUnit(g *engine.Graph[*nodetasks.Node], executable, sha, conf string, retries int) {
	unit, err := selfUnitDefinition(conf, retries)
	if err != nil {
		engine.Add(g, &refusedUnit{Name: UnitName, Problem: err.Error()})
		return
	}
	engine.Add(g, &Executable{Path: InstalledBinary, Source: executable, SHA256: sha, Mode: ptr(os.FileMode(0o755))})
	engine.Add(g, &nodetasks.SystemdService{
		Name:       UnitName,
		Definition: ptr(unit),
		Enabled:    ptr(true),
	})
}

// selfUnitDefinition is the unit that runs nodeup with conf at boot: after the network is up, once, and reported
// active afterwards so that `systemctl status` shows how the last run went. Its command line is written by the
// model's rules for units (model.ExecLine): systemd reads back exactly conf, whatever it holds (a quote, "%",
// "$", a carriage return or another control character is escaped, never a new line of the unit); a conf that
// no unit can hold is an error.
func selfUnitDefinition(conf string, retries int) (string, error) {
	args := []string{InstalledBinary, "--conf=" + conf}
	if retries != 0 {
		args = append(args, "--retries="+strconv.Itoa(retries))
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

// selfUnit is selfUnitDefinition's unit, "" for a conf it refuses (addSelfUnit never writes that: it refuses
// the run first).
func selfUnit(conf string, retries int) string {
	unit, _ := selfUnitDefinition(conf, retries)
	return unit
}

// refusedUnit stands in the graph for a unit nodeup cannot write. Its Validate fails, so the engine stops the
// run before any task's Find (an *engine.ValidationError: not retried), with the problem under the unit's key.
// It never runs.
type refusedUnit struct {
	// Name is the unit's name; Problem says why it cannot be written.
	Name, Problem string
}

var (
	_ engine.Resource[*refusedUnit, *nodetasks.Node] = (*refusedUnit)(nil)
	_ engine.Renderer[*refusedUnit, *nodetasks.Node] = (*refusedUnit)(nil)
	_ engine.Validator                               = (*refusedUnit)(nil)
)

func (u *refusedUnit) Key() engine.Key     { return engine.Key{Type: "SystemdService", Name: u.Name} }
func (u *refusedUnit) Deps() []engine.Task { return nil }
func (u *refusedUnit) Validate() error     { return errors.New(u.Problem) }

func (u *refusedUnit) Find(ctx context.Context, n *nodetasks.Node) (*refusedUnit, error) {
	return nil, engine.Terminal(u.Validate())
}

func (u *refusedUnit) CheckChanges(actual, expected, changes *refusedUnit) error { return u.Validate() }

func (u *refusedUnit) Render(ctx context.Context, n *nodetasks.Node, actual, expected, changes *refusedUnit) error {
	return u.Validate()
}
