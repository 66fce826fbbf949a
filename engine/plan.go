package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Action is what a change does to an object.
type Action string

const (
	Create Action = "create"
	Modify Action = "modify"
	// Replace is the change of an object that cannot change in place: a new object takes the old one's place
	// (see Replacer); Change.Note names the old one.
	Replace Action = "replace"
	// Delete is an object a run deletes. No task's change is a deletion: a caller adds them to the plan (cloudup:
	// what an apply leaves unused), with a Note that says why.
	Delete Action = "delete"
)

// Replacer is a task of type T whose object cannot change in place: when it differs from the world, the task
// makes a new object and the old one goes. Its change is a Replace, not a Modify, and Replaces says, for the
// plan, which object it replaces and what becomes of it ("replaces instance template nodes-1a2b3c4d").
type Replacer[T any] interface {
	Replaces(actual T) string
}

// Noter is a task of type T whose modification makes something its fields do not show: ChangeNote says it in a
// few words for the plan (a launch template's change makes a new version: "new version 4, default 3 -> 4"), ""
// when there is nothing to say. It is asked of a Modify only (a Replacer's Replaces says its own).
type Noter[T any] interface {
	ChangeNote(actual T) string
}

// Change is one task's planned (dry run) or applied change.
type Change struct {
	Key    Key
	Action Action
	Fields []FieldChange // in the task's field order
	// Note says more of the change in a few words, shown after its key: what a replacement replaces, why a
	// deletion deletes, what a modification makes (Noter).
	Note string
}

// Plan is the changes of a run, sorted by key.
type Plan struct {
	Changes []Change
	// Incomplete are the tasks the run did not finish, sorted: they failed or did not run, so the plan does not
	// say what they would change. The text plan then ends by saying that it is incomplete.
	Incomplete []Key
	// Spec is what changed in the run's input, by field path, set by the caller (cloudup: the cluster's complete
	// spec, last applied against now). The text plan shows it first, once.
	Spec []PathChange
	// Echoes say which parts of the changes' field-path diffs repeat Spec: the text plan leaves them out and
	// counts them; the JSON plan keeps every path.
	Echoes []Echo
}

// Echo says that in the change of Key, the field-path diff of its text field Field repeats the plan's Spec: a
// path Prefix+rest is left out of the text plan when Spec holds SpecPrefix+rest with the same values. For a node
// configuration that embeds the cluster's spec under "cluster.": Prefix "cluster.", SpecPrefix "".
type Echo struct {
	Key        Key
	Field      string
	Prefix     string
	SpecPrefix string
}

func newPlan(changes []Change) *Plan {
	sort.Slice(changes, func(i, j int) bool { return keyLess(changes[i].Key, changes[j].Key) })
	return &Plan{Changes: changes}
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

// Add adds changes made outside the engine (deletions) to the plan, keeping it sorted by key.
func (p *Plan) Add(changes ...Change) {
	p.Changes = newPlan(append(p.Changes, changes...)).Changes
}

// Deletions are the keys changes delete: what an apply that deletes outside the engine may delete, when changes
// are its dry run's plan.
func Deletions(changes []Change) map[Key]bool {
	out := map[Key]bool{}
	for _, c := range changes {
		if c.Action == Delete {
			out[c.Key] = true
		}
	}
	return out
}

// WriteText writes the human report: the spec's changes by field path, then creations, modifications,
// replacements and deletions, each field with its value or its "old -> new". A change to a text field is shown by field path when both texts are
// YAML or JSON mappings (DiffStructured), else as a line diff with three lines of context, a list of flags flag by
// flag; secrets are (sensitive). It ends with "Must specify --yes to apply changes", or "No changes need to be
// applied" when the plan is empty; an incomplete plan (a run with failures) ends by saying how many tasks could
// not be planned instead.
func (p *Plan) WriteText(w io.Writer) error {
	return p.WriteTextApplying(w, "Must specify --yes to apply changes")
}

// WriteTextApplying is WriteText whose last line, when there are changes, is howToApply: the way to apply them
// of the binary that prints it ("Run nodeup without --dryrun to apply these changes").
func (p *Plan) WriteTextApplying(w io.Writer, howToApply string) error {
	bw := bufio.NewWriter(w)
	if len(p.Spec) > 0 {
		bw.WriteString("Spec changes:\n")
		for _, c := range p.Spec {
			for _, l := range c.textLines() {
				bw.WriteString("  " + l + "\n")
			}
		}
	}
	for _, section := range []struct {
		action Action
		title  string
	}{{Create, "Will create resources:"}, {Modify, "Will modify resources:"}, {Replace, "Will replace resources:"},
		{Delete, "Will delete resources:"}} {
		first := true
		for _, c := range p.Changes {
			if c.Action != section.action {
				continue
			}
			if first {
				bw.WriteString(section.title + "\n")
				first = false
			}
			p.writeChange(bw, c)
		}
	}
	switch {
	case len(p.Incomplete) > 0:
		fmt.Fprintf(bw, "The plan is incomplete: %d task(s) failed or did not run, and what they would change is not shown (see the errors)\n",
			len(p.Incomplete))
	case p.Empty():
		bw.WriteString("No changes need to be applied\n")
	default:
		bw.WriteString(howToApply + "\n")
	}
	return bw.Flush()
}

// createdLines is how many lines of a created multi-line value the text report shows.
const createdLines = 10

func (p *Plan) writeChange(w *bufio.Writer, c Change) {
	w.WriteString("  " + c.Key.String())
	if c.Note != "" {
		w.WriteString(" (" + c.Note + ")")
	}
	w.WriteString("\n")
	width := 0
	for _, f := range c.Fields {
		width = max(width, len(f.Name))
	}
	for _, f := range c.Fields {
		oldText, oldMulti := textOf(f.Old)
		newText, newMulti := textOf(f.New)
		if oldMulti || newMulti {
			w.WriteString("    " + f.Name + "\n")
			var lines []string
			if c.Action == Create {
				lines = lineDiff("", newText)
				if len(lines) > createdLines+2 {
					// A new file's whole text adds nothing a reviewer reads past its start; the JSON plan has it all.
					rest := len(lines) - createdLines
					lines = append(lines[:createdLines:createdLines], fmt.Sprintf("  ... (%d more lines)", rest))
				}
			} else {
				lines = p.textDiff(c.Key, f.Name, oldText, newText)
			}
			for _, line := range lines {
				w.WriteString("      ")
				w.WriteString(line)
				w.WriteByte('\n')
			}
			continue
		}
		w.WriteString("    " + f.Name + strings.Repeat(" ", width-len(f.Name)+4))
		if c.Action == Create {
			w.WriteString(formatValue(f.New))
		} else {
			w.WriteString(formatValue(f.Old) + " -> " + formatValue(f.New))
		}
		w.WriteString("\n")
	}
}

// textDiff is the text plan's lines for a modified text field: its field-path changes less those Spec shows,
// or its line diff.
func (p *Plan) textDiff(key Key, field, oldText, newText string) []string {
	changes, ok := DiffStructured(oldText, newText)
	if !ok || len(changes) == 0 {
		return lineDiff(oldText, newText)
	}
	var lines []string
	echoed := 0
	for _, pc := range changes {
		if p.echoed(key, field, pc) {
			echoed++
			continue
		}
		lines = append(lines, pc.textLines()...)
	}
	if echoed > 0 {
		note := fmt.Sprintf("%d changes", echoed)
		if echoed == 1 {
			note = "1 change"
		}
		if len(lines) > 0 {
			note = "and " + note
		}
		lines = append(lines, "("+note+" shown in the spec changes above)")
	}
	return lines
}

// echoed reports whether a field-path change of key's field repeats one of Spec.
func (p *Plan) echoed(key Key, field string, pc PathChange) bool {
	for _, e := range p.Echoes {
		if e.Key != key || e.Field != field || !strings.HasPrefix(pc.Path, e.Prefix) {
			continue
		}
		specPath := e.SpecPrefix + strings.TrimPrefix(pc.Path, e.Prefix)
		for _, s := range p.Spec {
			if s.Path != specPath {
				continue
			}
			s.Path = pc.Path
			if reflect.DeepEqual(s, pc) {
				return true
			}
		}
	}
	return false
}

// PlanAPIVersion versions the JSON plan (docs/plan-json.md). A consumer must check it.
const PlanAPIVersion = "kubeup.dev/v1alpha3"

type jsonPlan struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Summary    jsonSummary  `json:"summary"`
	Incomplete []string     `json:"incomplete"`
	Spec       []jsonPath   `json:"spec"`
	Changes    []jsonChange `json:"changes"`
}

type jsonSummary struct {
	Create  int `json:"create"`
	Modify  int `json:"modify"`
	Replace int `json:"replace"`
	Delete  int `json:"delete"`
}

type jsonChange struct {
	Key    string      `json:"key"`
	Type   string      `json:"type"`
	Name   string      `json:"name"`
	Action Action      `json:"action"`
	Note   string      `json:"note,omitempty"`
	Fields []jsonField `json:"fields"`
}

// jsonField is a field's value before and after; or, for a modified text, its changes by field path or its line
// diff.
type jsonField struct {
	Name    string     `json:"name"`
	Before  *any       `json:"before,omitempty"`
	After   *any       `json:"after,omitempty"`
	Changes []jsonPath `json:"changes,omitempty"`
	Lines   []string   `json:"lines,omitempty"`
}

// jsonPath is a PathChange: before and after (omitted when the field is absent), or the flags removed and added,
// or the lines of a multi-line string's diff.
type jsonPath struct {
	Path    string   `json:"path"`
	Before  *any     `json:"before,omitempty"`
	After   *any     `json:"after,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Added   []string `json:"added,omitempty"`
	Lines   []string `json:"lines,omitempty"`
}

func some(v any) *any { return &v }

func jsonPaths(changes []PathChange) []jsonPath {
	out := make([]jsonPath, 0, len(changes))
	for _, c := range changes {
		jp := jsonPath{Path: c.Path}
		switch c.kind() {
		case "lines":
			jp.Lines = c.Lines
		case "flags":
			jp.Removed, jp.Added = nonNil(c.Removed), nonNil(c.Added)
		default:
			if c.Old != Absent {
				jp.Before = some(c.Old)
			}
			if c.New != Absent {
				jp.After = some(c.New)
			}
		}
		out = append(out, jp)
	}
	return out
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// WriteJSON writes the machine-readable plan (docs/plan-json.md): apiVersion and kind; a summary that counts
// the changes by action; the keys of the tasks that could not be planned; the spec's changes by field path; then
// per change its key, action, note and fields. A field
// has its value before (null on create) and after; a modified text field has instead its changes by field path
// (a YAML or JSON text) or its line diff. Secrets are (sensitive).
func (p *Plan) WriteJSON(w io.Writer) error {
	out := jsonPlan{APIVersion: PlanAPIVersion, Kind: "Plan", Spec: jsonPaths(p.Spec),
		Incomplete: make([]string, 0, len(p.Incomplete)), Changes: make([]jsonChange, 0, len(p.Changes))}
	for _, k := range p.Incomplete {
		out.Incomplete = append(out.Incomplete, k.String())
	}
	for _, c := range p.Changes {
		switch c.Action {
		case Create:
			out.Summary.Create++
		case Modify:
			out.Summary.Modify++
		case Replace:
			out.Summary.Replace++
		case Delete:
			out.Summary.Delete++
		}
		jc := jsonChange{Key: c.Key.String(), Type: c.Key.Type, Name: c.Key.Name, Action: c.Action, Note: c.Note,
			Fields: make([]jsonField, 0, len(c.Fields))}
		for _, f := range c.Fields {
			jc.Fields = append(jc.Fields, jsonFieldOf(c.Action, f))
		}
		out.Changes = append(out.Changes, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func jsonFieldOf(action Action, f FieldChange) jsonField {
	oldText, oldMulti := textOf(f.Old)
	newText, newMulti := textOf(f.New)
	if action != Create && (oldMulti || newMulti) {
		if changes, ok := DiffStructured(oldText, newText); ok && len(changes) > 0 {
			return jsonField{Name: f.Name, Changes: jsonPaths(changes)}
		}
		return jsonField{Name: f.Name, Lines: nonNil(lineDiff(oldText, newText))}
	}
	return jsonField{Name: f.Name, Before: some(jsonValue(f.Old)), After: some(jsonValue(f.New))}
}
