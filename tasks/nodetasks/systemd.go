package nodetasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
)

// Where units, drop-ins and the inputs a service was started with live on the node.
const (
	unitDir   = "/etc/systemd/system"
	inputsDir = "/var/lib/kubeup/systemd"
)

// unitState is what systemd says of a unit.
type unitState struct {
	LoadState, ActiveState, SubState, Result, UnitFileState string
	NeedDaemonReload                                        bool
}

func (s unitState) running() bool { return s.ActiveState == "active" || s.ActiveState == "reloading" }

// enabled reports whether the unit starts at boot, or is started by others and cannot be enabled (static).
func (s unitState) enabled() bool {
	switch s.UnitFileState {
	case "enabled", "enabled-runtime", "static", "indirect", "generated", "alias":
		return true
	}
	return false
}

func (s unitState) String() string {
	str := fmt.Sprintf("ActiveState=%s SubState=%s", s.ActiveState, s.SubState)
	if s.Result != "" {
		str += " Result=" + s.Result
	}
	return str
}

// unitState asks systemd for the state of unit.
func (n *Node) unitState(ctx context.Context, unit string) (unitState, error) {
	props, err := n.Systemd.GetUnitPropertiesContext(ctx, unit)
	if err != nil {
		return unitState{}, engine.Retryable(fmt.Errorf("reading the state of %s from systemd: %w", unit, err))
	}
	str := func(k string) string { s, _ := props[k].(string); return s }
	st := unitState{LoadState: str("LoadState"), ActiveState: str("ActiveState"), SubState: str("SubState"),
		UnitFileState: str("UnitFileState")}
	st.NeedDaemonReload, _ = props["NeedDaemonReload"].(bool)
	if strings.HasSuffix(unit, ".service") {
		if p, err := n.Systemd.GetServicePropertyContext(ctx, unit, "Result"); err == nil {
			st.Result, _ = p.Value.Value().(string)
		}
	}
	return st, nil
}

// reload is systemctl daemon-reload.
func (n *Node) reload(ctx context.Context) error {
	if err := n.Systemd.ReloadContext(ctx); err != nil {
		return fmt.Errorf("reloading systemd: %w", err)
	}
	engine.Logger(ctx).Info("reloaded systemd")
	return nil
}

// startJob starts (or restarts) unit and waits for the job's result, then for the service to stay up for
// n.startSettle: a service that exits at once is a failed start too. A failure is reported with the unit's
// state and its last journal lines.
func (n *Node) startJob(ctx context.Context, unit string, restart bool) error {
	verb, call := "starting", n.Systemd.StartUnitContext
	if restart {
		verb, call = "restarting", n.Systemd.RestartUnitContext
	}
	// A unit in a crash loop (failed, or waiting to restart) counts its starts against its start limit, and past
	// it refuses a new start ("start request repeated too quickly") until the count is reset, as
	// `systemctl reset-failed` does. nodeup is asked to start it, presumably because what made it fail has
	// changed: it gets a fresh start limit. A running unit is left as it is.
	if st, err := n.unitState(ctx, unit); err == nil && !st.running() {
		if err := n.Systemd.ResetFailedUnitContext(ctx, unit); err != nil {
			engine.Logger(ctx).Warn("could not reset the unit's failed state and start limit", "unit", unit, "err", err)
		}
	}
	done := make(chan string, 1)
	if _, err := call(ctx, unit, "replace", done); err != nil {
		return fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	var result string
	select {
	case result = <-done:
	case <-ctx.Done():
		return fmt.Errorf("%s %s: waiting for the job: %w", verb, unit, ctx.Err())
	}
	failed := result != "done"
	var st unitState
	var err error
	for deadline := time.Now().Add(n.startSettle); ; {
		if st, err = n.unitState(ctx, unit); err != nil {
			return err
		}
		settled := st.ActiveState == "failed" || st.ActiveState == "inactive" ||
			(st.ActiveState == "activating" && st.SubState == "auto-restart")
		if failed || settled || !time.Now().Before(deadline) {
			failed = failed || settled && !(st.ActiveState == "inactive" && st.Result == "success")
			break
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if !failed {
		return nil
	}
	return engine.Terminal(fmt.Errorf("%s %s: job %s, the unit is %s; last journal lines:\n%s",
		verb, unit, result, st, n.journalctl(ctx, unit)))
}

// journalctl returns the last lines the journal of Root holds for unit, indented, for an error message. The
// journal may be a moment behind the failure it tells of: it is read again, briefly, while it has nothing.
func (n *Node) journalctl(ctx context.Context, unit string) string {
	args := []string{"-u", unit, "-n", "20", "--no-pager", "-q"}
	if n.Root != "/" {
		args = append([]string{"--root", n.Root}, args...)
	}
	var out []byte
	var err error
	for range 10 {
		out, err = exec.CommandContext(ctx, "journalctl", args...).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	text := strings.TrimRight(string(out), "\n")
	if err != nil {
		text = fmt.Sprintf("(journalctl %s: %v) %s", strings.Join(args, " "), err, text)
	}
	if text == "" {
		text = "(none)"
	}
	return "  " + strings.ReplaceAll(text, "\n", "\n  ")
}

// wantsLinks returns the symlinks that enable a unit without systemd, by its [Install] section: WantedBy= and
// RequiredBy= targets get TARGET.wants/UNIT and TARGET.requires/UNIT in /etc/systemd/system.
func wantsLinks(unit, definition string) []string {
	var links []string
	section := ""
	sc := bufio.NewScanner(strings.NewReader(definition))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if section != "[Install]" || !ok {
			continue
		}
		suffix := map[string]string{"WantedBy": ".wants", "RequiredBy": ".requires"}[strings.TrimSpace(k)]
		if suffix == "" {
			continue
		}
		for _, target := range strings.Fields(v) {
			links = append(links, path.Join(unitDir, target+suffix, unit))
		}
	}
	return links
}

// unitDefinition returns the contents of the unit's file: the one kubeup writes, else the first one systemd
// would find; "" when there is none.
func (n *Node) unitDefinition(s *SystemdService) (string, error) {
	if s.Definition != nil {
		return *s.Definition, nil
	}
	for _, dir := range []string{unitDir, "/usr/lib/systemd/system", "/lib/systemd/system"} {
		if b, ok, err := n.readNodeFile(path.Join(dir, s.Name)); err != nil || ok {
			return string(b), err
		}
	}
	return "", nil
}

// linksEnabled reports whether every wants/ link of the unit exists (true when it has none: static).
func (n *Node) linksEnabled(links []string) (bool, error) {
	for _, l := range links {
		p, err := n.hostPath(l, false)
		if err != nil {
			return false, err
		}
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return false, nil
		} else if err != nil {
			return false, engine.FileError(err)
		}
	}
	return true, nil
}

// setLinks creates (enable) or removes the wants/ links of a unit, as systemctl enable/disable would without
// systemd.
func (n *Node) setLinks(unit string, links []string, enable bool) error {
	for _, l := range links {
		p, err := n.hostPath(l, enable)
		if err != nil {
			return err
		}
		if !enable {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("disabling %s: %w", unit, engine.FileError(err))
			}
			continue
		}
		if err := os.Symlink(path.Join(unitDir, unit), p); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("enabling %s: %w", unit, engine.FileError(err))
		}
	}
	return nil
}
