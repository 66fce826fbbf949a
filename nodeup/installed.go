package nodeup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// nodeup keeps a record of what it installed on the node, so that a configuration that no longer wants
// something (a control plane's manifests, keys and protokube on a node that is now a worker) gets it removed:
//
//	# Managed by kubeup (nodeup): ...
//	file /etc/kubernetes/manifests/kube-apiserver.manifest
//	unit protokube.service
//
// Each run, what the record lists and the run's graph does not install becomes a removal in the same graph: a
// file an Absent task, a unit an AbsentService (stopped, disabled, its unit file removed), after which the files
// go (protokube, stopped first, cannot write them back). The dry run lists them under "Will delete resources".
// The record itself is a File of the graph, written after every other task succeeded; before an apply changes
// anything, the record is first extended with what the run will install, so that a run that fails half way
// leaves nothing installed unrecorded. Only what the record lists, and only at paths and units kubeup owns
// (checkOwned), is ever removed: nothing nodeup did not install is touched. Directories are not recorded (the
// static pods' directory stays).

// installedRecord is the record's path on the node; unitDir is where the units nodeup defines are.
const (
	installedRecord = "/var/lib/kubeup/nodeup/installed"
	unitDir         = "/etc/systemd/system"
)

const recordHeader = "# Managed by kubeup (nodeup): what nodeup installed on this node. A later run removes what its\n" +
	"# configuration no longer wants; it never removes anything this record does not list.\n"

// installed is what a record lists, or what a graph installs: files (and symlinks) by path, units by name.
type installed struct {
	files, units []string
}

// text is the record's contents: the header, then one line per entry, sorted.
func (in installed) text() string {
	var b strings.Builder
	b.WriteString(recordHeader)
	for _, f := range in.files {
		b.WriteString("file " + f + "\n")
	}
	for _, u := range in.units {
		b.WriteString("unit " + u + "\n")
	}
	return b.String()
}

// union is in with what other adds, sorted.
func (in installed) union(other installed) installed {
	merge := func(a, b []string) []string {
		return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a), b...))))
	}
	return installed{files: merge(in.files, other.files), units: merge(in.units, other.units)}
}

// contains reports whether in lists everything other does.
func (in installed) contains(other installed) bool {
	for _, f := range other.files {
		if !slices.Contains(in.files, f) {
			return false
		}
	}
	for _, u := range other.units {
		if !slices.Contains(in.units, u) {
			return false
		}
	}
	return true
}

// installedBy is what g installs from the node configuration: its files, symlinks and manifests, and the units
// of model.NodeupUnits it defines. A directory is not listed (nodeup never removes one), nor what
// --install-systemd-unit installs (nodeup itself, which its boot unit runs without that flag). It also returns
// every path g names, directories and unit files included: none of them is ever removed.
func installedBy(g *engine.Graph[*nodetasks.Node]) (in installed, named map[string]bool) {
	named = map[string]bool{}
	for _, t := range g.Tasks() {
		switch t := t.(type) {
		case *nodetasks.File:
			named[t.Path] = true
			if t.Type == nil || *t.Type != nodetasks.TypeDirectory {
				in.files = append(in.files, t.Path)
			}
		case *nodetasks.ManifestFile:
			named[t.Path] = true
			in.files = append(in.files, t.Path)
		case *Executable:
			named[t.Path] = true // nodeup itself: never recorded, never removed (the unit that runs it at boot passes no --install-systemd-unit)
		case *nodetasks.SystemdService:
			named[path.Join(unitDir, t.Name)] = true
			if t.Definition != nil && slices.Contains(model.NodeupUnits, t.Name) {
				in.units = append(in.units, t.Name)
			}
		}
	}
	slices.Sort(in.files)
	slices.Sort(in.units)
	return installed{files: slices.Compact(in.files), units: slices.Compact(in.units)}, named
}

// readRecord reads the record under the node root: nothing when root or the record does not exist. A line that
// is not a file kubeup owns or a unit of its own is left out, with a warning: it is never removed.
func readRecord(root string, log *slog.Logger) (installed, error) {
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return installed{}, nil
	}
	if err != nil {
		return installed{}, fmt.Errorf("opening the node root: %w", err)
	}
	defer r.Close()
	b, err := r.ReadFile(strings.TrimPrefix(installedRecord, "/"))
	if errors.Is(err, fs.ErrNotExist) {
		return installed{}, nil
	}
	if err != nil {
		return installed{}, fmt.Errorf("reading nodeup's record of what it installed: %w", err)
	}
	var in installed
	for _, line := range strings.Split(string(b), "\n") {
		kind, v, _ := strings.Cut(line, " ")
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case kind == "file" && path.IsAbs(v) && path.Clean(v) == v && model.OwnedNodePath(v) && v != installedRecord:
			in.files = append(in.files, v)
		case kind == "unit" && slices.Contains(model.NodeupUnits, v):
			in.units = append(in.units, v)
		default:
			log.Warn("nodeup's record of what it installed has a line that is not a file or unit kubeup owns: it is left alone", "record", installedRecord, "line", line)
		}
	}
	return installed{}.union(in), nil
}

// record is what addRemovals found: what the record says, and what the run installs.
type record struct {
	old, want installed
}

// addRemovals adds to g the removal of what the record under root lists and g no longer installs, and the task
// that rewrites the record, after every other.
func addRemovals(g *engine.Graph[*nodetasks.Node], root string, log *slog.Logger) (*record, error) {
	old, err := readRecord(root, log)
	if err != nil {
		return nil, err
	}
	want, named := installedBy(g)
	var stops []engine.Task
	for _, u := range old.units {
		if !slices.Contains(want.units, u) {
			stops = append(stops, engine.Add(g, &nodetasks.AbsentService{Name: u}))
		}
	}
	for _, f := range old.files {
		if !named[f] {
			engine.Add(g, &nodetasks.Absent{Path: f, After: stops})
		}
	}
	engine.Add(g, &nodetasks.File{Path: installedRecord, Contents: ptr(want.text()), Mode: ptr(os.FileMode(0o644)), After: g.Tasks()})
	return &record{old: old, want: want}, nil
}

// recordAhead extends the record under root, before an apply, with what the run installs (unless it lists it
// already), so that a run that fails half way leaves nothing it installed unrecorded.
func (r *record) recordAhead(ctx context.Context, root string, log *slog.Logger) error {
	if r.old.contains(r.want) {
		return nil
	}
	node, err := nodetasks.NewNode(ctx, root, nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone})
	if err != nil {
		return err
	}
	defer node.Close()
	g := engine.NewGraph[*nodetasks.Node]()
	engine.Add(g, &nodetasks.File{Path: installedRecord, Contents: ptr(r.old.union(r.want).text()), Mode: ptr(os.FileMode(0o644))})
	if _, err := engine.Run(ctx, g, node, engine.Options{Target: engine.Apply, Logger: log}); err != nil {
		return fmt.Errorf("recording what nodeup will install in %s: %w", installedRecord, err)
	}
	return nil
}

// isRemoval says whether a change is one of addRemovals' removals.
func isRemoval(k engine.Key) bool { return k.Type == "Absent" || k.Type == "AbsentService" }

// writeRemovals writes the plan's removals under "Will delete resources:", each with what Find saw.
func writeRemovals(w io.Writer, changes []engine.Change) {
	first := true
	for _, c := range changes {
		if !isRemoval(c.Key) {
			continue
		}
		if first {
			io.WriteString(w, "Will delete resources (installed by nodeup, no longer wanted):\n")
			first = false
		}
		var found []string
		for _, f := range c.Fields {
			if f.Old == true {
				found = append(found, strings.ToLower(f.Name))
			}
		}
		fmt.Fprintf(w, "  %s (%s)\n", c.Key, strings.Join(found, ", "))
	}
}

// splitRemovals returns p without its removals, and whether it had any.
func splitRemovals(p *engine.Plan) (*engine.Plan, bool) {
	rest := *p
	rest.Changes = slices.DeleteFunc(slices.Clone(p.Changes), func(c engine.Change) bool { return isRemoval(c.Key) })
	return &rest, len(rest.Changes) < len(p.Changes)
}

// writePlanWithRemovals is writePlan's text: the engine's plan of what the run creates and modifies, then what
// it deletes, then howToApply.
func writePlanWithRemovals(w io.Writer, p *engine.Plan, howToApply string) error {
	rest, has := splitRemovals(p)
	if !has {
		return p.WriteTextApplying(w, howToApply)
	}
	var b bytes.Buffer
	if !rest.Empty() {
		if err := rest.WriteTextApplying(&b, howToApply); err != nil {
			return err
		}
		b.Truncate(len(b.String()) - len(howToApply) - 1) // its last line, said once below
	}
	writeRemovals(&b, p.Changes)
	b.WriteString(howToApply + "\n")
	_, err := w.Write(b.Bytes())
	return err
}
