package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"kubeup.dev/kubeup/engine"
)

// AbsentService is a systemd unit that kubeup installed (a SystemdService with a Definition) and no longer wants:
// protokube.service on a node that was a control plane. Render stops the service, disables it, removes its unit
// file /etc/systemd/system/<Name> and kubeup's record of the inputs it ran with, and reloads systemd. Only that
// unit file is removed: a unit of the same name elsewhere (a package's, in /usr/lib/systemd/system) and drop-ins
// are left alone. Without a systemd, the wants/ links of the unit file are removed with it, and running is not
// known (false). Its key is "AbsentService/<name>": put it or a SystemdService of the name in a graph, never
// both.
type AbsentService struct {
	// Name is the unit's name, such as "protokube.service", and the task's name.
	Name string
	// Running, Enabled and Installed are what Find saw: the service runs, it is enabled (by systemd's account, or
	// a wants/ link of its unit file), its unit file is in /etc/systemd/system. The task wants all three false.
	Running, Enabled, Installed bool
	// After orders the removal after other tasks.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*AbsentService, *Node] = (*AbsentService)(nil)
	_ engine.Renderer[*AbsentService, *Node] = (*AbsentService)(nil)
	_ engine.Validator                       = (*AbsentService)(nil)
)

func (a *AbsentService) Key() engine.Key     { return engine.Key{Type: "AbsentService", Name: a.Name} }
func (a *AbsentService) Deps() []engine.Task { return a.After }

func (a *AbsentService) unitPath() string { return path.Join(unitDir, a.Name) }

// Validate checks the unit's name, and that the task wants the unit gone.
func (a *AbsentService) Validate() error {
	if err := (&SystemdService{Name: a.Name}).Validate(); err != nil {
		return err
	}
	if a.Running || a.Enabled || a.Installed {
		return errors.New("an AbsentService wants the unit gone: leave Running, Enabled and Installed false")
	}
	return nil
}

// Find reads whether the unit file is there, whether the unit is enabled and whether it runs. It never returns
// nil: a unit that is gone is the task done.
func (a *AbsentService) Find(ctx context.Context, n *Node) (*AbsentService, error) {
	def, installed, err := n.readNodeFile(a.unitPath())
	if err != nil {
		return nil, err
	}
	actual := &AbsentService{Name: a.Name, Installed: installed}
	if n.Systemd == nil {
		for _, l := range wantsLinks(a.Name, string(def)) {
			if _, ok, err := n.lstatNode(l); err != nil {
				return nil, err
			} else if ok {
				actual.Enabled = true
			}
		}
		return actual, nil
	}
	st, err := n.unitState(ctx, a.Name)
	if err != nil {
		return nil, err
	}
	actual.Running = st.running()
	actual.Enabled = st.UnitFileState == "enabled" || st.UnitFileState == "enabled-runtime"
	return actual, nil
}

func (a *AbsentService) CheckChanges(actual, expected, changes *AbsentService) error {
	return expected.Validate()
}

// Render stops, disables and removes the unit, as Find found it.
func (a *AbsentService) Render(ctx context.Context, n *Node, actual, expected, changes *AbsentService) error {
	log := engine.Logger(ctx)
	if actual.Running && n.Systemd != nil {
		done := make(chan string, 1)
		if _, err := n.Systemd.StopUnitContext(ctx, a.Name, "replace", done); err != nil {
			return fmt.Errorf("stopping %s: %w", a.Name, err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		log.Info("stopped service", "unit", a.Name)
	}
	n.reloadMu.Lock()
	defer n.reloadMu.Unlock()
	if actual.Enabled {
		if n.Systemd != nil {
			if _, err := n.Systemd.DisableUnitFilesContext(ctx, []string{a.Name}, false); err != nil {
				return fmt.Errorf("disabling %s: %w", a.Name, err)
			}
		} else {
			def, _, err := n.readNodeFile(a.unitPath())
			if err != nil {
				return err
			}
			if err := n.setLinks(a.Name, wantsLinks(a.Name, string(def)), false); err != nil {
				return err
			}
		}
		log.Info("disabled unit", "unit", a.Name)
	}
	for _, p := range []string{a.unitPath(), path.Join(inputsDir, a.Name+".inputs")} {
		if err := n.removeNodeFile(p); err != nil {
			return err
		}
	}
	if actual.Installed {
		log.Info("removed unit file", "unit", a.Name, "path", a.unitPath())
	}
	if n.Systemd != nil {
		return n.reload(ctx)
	}
	return nil
}

// removeNodeFile removes the file (or symbolic link, never followed) at node path p, if there is one, and syncs
// its directory.
func (n *Node) removeNodeFile(p string) error {
	host, err := n.hostPath(p, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(host); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("removing %s: %w", p, engine.FileError(err))
	}
	return syncDir(filepath.Dir(host))
}
