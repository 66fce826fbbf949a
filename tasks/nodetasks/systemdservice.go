package nodetasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// SystemdService is a systemd unit, with optional drop-ins, and its desired state: enabled, running. Through
// systemd's D-Bus API it reloads systemd only when a unit file changed, restarts the service only when the
// unit, a drop-in or a file in DependsOn changed (by content hash), and starts it when it is stopped.
type SystemdService struct {
	// Name is the unit's name, such as "kubelet.service", and the task's name.
	Name string
	// Definition is the unit file's contents, in /etc/systemd/system/<Name>; nil = a unit installed by other
	// means (a package), whose file is left alone.
	Definition *string
	// DropIns are drop-in files by name ("10-kubeup.conf") and contents, in /etc/systemd/system/<Name>.d/.
	// Drop-ins not named here are left alone (such as the override.conf of `systemctl edit`).
	DropIns map[string]string `kubeup:"nilempty"`
	// Enabled says whether the unit starts at boot.
	Enabled *bool
	// Running says whether the service runs now.
	Running *bool
	// DependsOn are the File, Asset and ManifestFile tasks the service reads: it restarts when their content
	// changes. They also run before the service. Tasks of other types only order.
	DependsOn []engine.Task
	// Inputs is what the service runs with, one line per input (the unit, each drop-in, each DependsOn) with a
	// hash of its content: derived, set by Find when Running is true; leave it nil. The actual value is what the
	// running service was last started with (recorded in /var/lib/kubeup/systemd/<Name>.inputs), so that a
	// difference restarts it, and the dry run shows which input changed.
	Inputs *string
}

var (
	_ engine.Resource[*SystemdService, *Node] = (*SystemdService)(nil)
	_ engine.Renderer[*SystemdService, *Node] = (*SystemdService)(nil)
)

func (s *SystemdService) Key() engine.Key     { return engine.Key{Type: "SystemdService", Name: s.Name} }
func (s *SystemdService) Deps() []engine.Task { return s.DependsOn }

// contentHasher is implemented by the tasks whose content a service can depend on.
type contentHasher interface {
	engine.Task
	contentHash(n *Node) (string, error)
}

func hashString(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// contentHash is the hash of the file as the task wants it: its Contents, or what the node has when the task
// leaves the contents alone.
func (f *File) contentHash(n *Node) (string, error) {
	switch {
	case f.Contents != nil:
		return hashString(*f.Contents), nil
	case f.SecretContents != nil: // a digest, which says nothing of the secret
		return hashString(f.SecretContents.Reveal()), nil
	case f.Target != nil:
		return hashString("symlink:" + *f.Target), nil
	case typeOf(f) == TypeDirectory:
		return "directory", nil
	}
	b, ok, err := n.readNodeFile(f.Path)
	if err != nil || !ok {
		return "absent", err
	}
	return hashString(string(b)), nil
}

func (a *Asset) contentHash(*Node) (string, error) { return a.SHA256, nil }

func (m *ManifestFile) contentHash(*Node) (string, error) {
	if m.Pod == nil {
		return "absent", nil
	}
	y, err := m.Pod.YAML()
	return hashString(y), err
}

// inputs renders what the service runs with: one line per input, "WHAT sha256:HASH" (16 hex digits are plenty
// to tell contents apart), the unit, then the drop-ins, then the dependencies, each sorted.
func (s *SystemdService) inputs(n *Node) (string, error) {
	var b strings.Builder
	short := func(h string) string { return h[:min(16, len(h))] }
	if s.Definition != nil {
		fmt.Fprintf(&b, "unit %s sha256:%s\n", s.Name, short(hashString(*s.Definition)))
	}
	for _, name := range slices.Sorted(maps.Keys(s.DropIns)) {
		fmt.Fprintf(&b, "drop-in %s sha256:%s\n", name, short(hashString(s.DropIns[name])))
	}
	var deps []string
	for _, d := range s.DependsOn {
		h, ok := d.(contentHasher)
		if !ok || h == nil {
			continue
		}
		sum, err := h.contentHash(n)
		if err != nil {
			return "", fmt.Errorf("hashing %s: %w", d.Key(), err)
		}
		deps = append(deps, fmt.Sprintf("%s sha256:%s\n", d.Key(), short(sum)))
	}
	slices.Sort(deps)
	b.WriteString(strings.Join(deps, ""))
	return b.String(), nil
}

func (s *SystemdService) unitPath() string   { return path.Join(unitDir, s.Name) }
func (s *SystemdService) dropInDir() string  { return path.Join(unitDir, s.Name+".d") }
func (s *SystemdService) inputsPath() string { return path.Join(inputsDir, s.Name+".inputs") }

// Find reads the unit file and the drop-ins the task names, and asks systemd whether the unit is enabled and
// running. It is nil when the task defines the unit and its file does not exist. Without systemd, enabled is
// read from the wants/ links, and running is taken as wanted: it cannot be known.
func (s *SystemdService) Find(ctx context.Context, n *Node) (*SystemdService, error) {
	if s.Running != nil && *s.Running {
		in, err := s.inputs(n)
		if err != nil {
			return nil, err
		}
		s.Inputs = &in
	}
	actual := &SystemdService{Name: s.Name, DependsOn: s.DependsOn}
	if s.Definition != nil {
		def, same, ok, err := n.readNodeFileComparing(s.unitPath(), *s.Definition)
		if err != nil || !ok {
			return nil, err
		}
		if same {
			actual.Definition = s.Definition
		} else {
			actual.Definition = &def
		}
	}
	for name := range s.DropIns {
		b, ok, err := n.readNodeFile(path.Join(s.dropInDir(), name))
		if err != nil {
			return nil, err
		}
		if ok {
			if actual.DropIns == nil {
				actual.DropIns = map[string]string{}
			}
			actual.DropIns[name] = string(b)
		}
	}
	recorded, hasRecord, err := n.readNodeFile(s.inputsPath())
	if err != nil {
		return nil, err
	}
	if hasRecord {
		r := string(recorded)
		actual.Inputs = &r
	}
	if n.Systemd == nil {
		def, err := n.unitDefinition(s)
		if err != nil {
			return nil, err
		}
		enabled, err := n.linksEnabled(wantsLinks(s.Name, def))
		if err != nil {
			return nil, err
		}
		actual.Enabled = &enabled
		actual.Running = s.Running
		return actual, nil
	}
	st, err := n.unitState(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	enabled, running := st.enabled(), st.running()
	actual.Enabled, actual.Running = &enabled, &running
	if !running {
		actual.Inputs = s.Inputs // it will start with what it is given: no restart to announce
	}
	return actual, nil
}

// writeNodeFile writes the file at node path p atomically, creating its directory.
func (n *Node) writeNodeFile(ctx context.Context, p string, data string, mode os.FileMode) error {
	return n.writeFileAtomic(ctx, p, []byte(data), mode, -1, -1)
}

var unitSuffixes = []string{".service", ".socket", ".timer", ".path", ".mount", ".target"}

// unitName is what systemd accepts as a unit name (letters, digits and ":-_.\@", at most 255 characters),
// with the suffix of a type kubeup manages.
var unitName = regexp.MustCompile(`^[A-Za-z0-9:_.\\@-]+\.(service|socket|timer|path|mount|target)$`)

// Validate checks the unit's name and the drop-ins' file names.
func (s *SystemdService) Validate() error {
	if len(s.Name) > 255 || !unitName.MatchString(s.Name) || strings.HasPrefix(s.Name, ".") {
		return fmt.Errorf("field Name: %q is not a unit name such as kubelet.service (one of %s)", s.Name, strings.Join(unitSuffixes, " "))
	}
	for _, name := range slices.Sorted(maps.Keys(s.DropIns)) {
		if strings.ContainsAny(name, "/\x00") || !strings.HasSuffix(name, ".conf") || name == ".conf" || strings.HasPrefix(name, ".") {
			return fmt.Errorf("field DropIns: %q is not a drop-in file name such as 10-kubeup.conf", name)
		}
	}
	return nil
}

func (s *SystemdService) CheckChanges(actual, expected, changes *SystemdService) error {
	return expected.Validate()
}

// Render writes the unit and drop-ins that differ and reloads systemd if it did; enables or disables; then
// starts the service if it is stopped, or restarts it if its inputs changed, and records the inputs it runs
// with. Without systemd it writes files, the wants/ links and the record only.
func (s *SystemdService) Render(ctx context.Context, n *Node, actual, expected, changes *SystemdService) error {
	log := engine.Logger(ctx)
	n.reloadMu.Lock()
	unitChanged, err := s.writeUnit(ctx, n, actual, expected)
	if err == nil && n.Systemd != nil {
		var st unitState
		if st, err = n.unitState(ctx, expected.Name); err == nil && (unitChanged || st.NeedDaemonReload) {
			err = n.reload(ctx)
		}
	}
	n.reloadMu.Unlock()
	if err != nil {
		return err
	}

	if changes.Enabled != nil {
		if err := s.setEnabled(ctx, n, *expected.Enabled); err != nil {
			return err
		}
	}
	if n.Systemd == nil {
		if changes.Inputs != nil {
			return n.writeNodeFile(ctx, expected.inputsPath(), *expected.Inputs, 0o644)
		}
		return nil
	}
	if expected.Running == nil {
		return nil
	}
	running := actual != nil && actual.Running != nil && *actual.Running
	switch want := *expected.Running; {
	case !want && running:
		done := make(chan string, 1)
		if _, err := n.Systemd.StopUnitContext(ctx, expected.Name, "replace", done); err != nil {
			return fmt.Errorf("stopping %s: %w", expected.Name, err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		log.Info("stopped service", "unit", expected.Name)
		return nil
	case !want:
		return nil
	case running && changes.Inputs == nil:
		return nil
	}
	if err := n.startJob(ctx, expected.Name, running); err != nil {
		return err
	}
	if running {
		log.Info("restarted service", "unit", expected.Name, "inputs", changedInputs(actual.Inputs, expected.Inputs))
	} else {
		log.Info("started service", "unit", expected.Name)
	}
	return n.writeNodeFile(ctx, expected.inputsPath(), *expected.Inputs, 0o644)
}

// writeUnit writes the unit file and the drop-ins that differ from actual, and reports whether it wrote any.
func (s *SystemdService) writeUnit(ctx context.Context, n *Node, actual, expected *SystemdService) (bool, error) {
	var written []string
	if expected.Definition != nil && (actual == nil || actual.Definition == nil || *actual.Definition != *expected.Definition) {
		if err := n.writeNodeFile(ctx, expected.unitPath(), *expected.Definition, 0o644); err != nil {
			return false, err
		}
		written = append(written, expected.unitPath())
	}
	for _, name := range slices.Sorted(maps.Keys(expected.DropIns)) {
		data := expected.DropIns[name]
		if actual != nil {
			if have, ok := actual.DropIns[name]; ok && have == data {
				continue
			}
		}
		p := path.Join(expected.dropInDir(), name)
		if err := n.writeNodeFile(ctx, p, data, 0o644); err != nil {
			return false, err
		}
		written = append(written, p)
	}
	if len(written) > 0 {
		engine.Logger(ctx).Info("wrote unit files", "unit", expected.Name, "files", written)
	}
	return len(written) > 0, nil
}

// setEnabled enables or disables the unit: through systemd when it runs (then reloaded, as systemctl does),
// else by its wants/ links.
func (s *SystemdService) setEnabled(ctx context.Context, n *Node, enable bool) error {
	log := engine.Logger(ctx)
	if n.Systemd == nil {
		def, err := n.unitDefinition(s)
		if err != nil {
			return err
		}
		if err := n.setLinks(s.Name, wantsLinks(s.Name, def), enable); err != nil {
			return err
		}
		log.Info("set enabled (unit files only: no systemd)", "unit", s.Name, "enabled", enable)
		return nil
	}
	n.reloadMu.Lock()
	defer n.reloadMu.Unlock()
	var err error
	if enable {
		_, _, err = n.Systemd.EnableUnitFilesContext(ctx, []string{s.Name}, false, false)
	} else {
		_, err = n.Systemd.DisableUnitFilesContext(ctx, []string{s.Name}, false)
	}
	if err != nil {
		return fmt.Errorf("setting %s enabled=%t: %w", s.Name, enable, err)
	}
	log.Info("set enabled", "unit", s.Name, "enabled", enable)
	return n.reload(ctx)
}

// changedInputs names the inputs that differ between two Inputs texts, for the log.
func changedInputs(old, cur *string) []string {
	have := map[string]bool{}
	if old != nil {
		for _, l := range strings.Split(*old, "\n") {
			have[l] = true
		}
	}
	var out []string
	if cur != nil {
		for _, l := range strings.Split(*cur, "\n") {
			if l != "" && !have[l] {
				what, _, _ := strings.Cut(l, " sha256:")
				out = append(out, what)
			}
		}
	}
	return out
}
