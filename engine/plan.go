package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Action is what a change does to an object.
type Action string

const (
	Create Action = "create"
	Modify Action = "modify"
)

// Change is one task's planned (dry run) or applied change.
type Change struct {
	Key    Key
	Action Action
	Fields []FieldChange // in the task's field order
}

// Plan is the changes of a run, sorted by key.
type Plan struct {
	Changes []Change
}

func newPlan(changes []Change) *Plan {
	sort.Slice(changes, func(i, j int) bool { return keyLess(changes[i].Key, changes[j].Key) })
	return &Plan{Changes: changes}
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

// WriteText writes the human report: creations, then modifications, each field with its value or its
// "old -> new", file contents as a line diff, secrets as (sensitive). It ends with "Must specify --yes to
// apply changes", or "No changes need to be applied" when the plan is empty.
func (p *Plan) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, section := range []struct {
		action Action
		title  string
	}{{Create, "Will create resources:"}, {Modify, "Will modify resources:"}} {
		first := true
		for _, c := range p.Changes {
			if c.Action != section.action {
				continue
			}
			if first {
				bw.WriteString(section.title + "\n")
				first = false
			}
			writeChange(bw, c)
		}
	}
	if p.Empty() {
		bw.WriteString("No changes need to be applied\n")
	} else {
		bw.WriteString("Must specify --yes to apply changes\n")
	}
	return bw.Flush()
}

// createdLines is how many lines of a created multi-line value the text report shows.
const createdLines = 10

func writeChange(w *bufio.Writer, c Change) {
	w.WriteString("  " + c.Key.String() + "\n")
	width := 0
	for _, f := range c.Fields {
		width = max(width, len(f.Name))
	}
	for _, f := range c.Fields {
		oldText, oldMulti := textOf(f.Old)
		newText, newMulti := textOf(f.New)
		if oldMulti || newMulti {
			w.WriteString("    " + f.Name + "\n")
			lines := lineDiff(oldText, newText)
			if c.Action == Create && len(lines) > createdLines+2 {
				// A new file's whole text adds nothing a reviewer reads past its start; the JSON plan has it all.
				rest := len(lines) - createdLines
				lines = append(lines[:createdLines:createdLines], fmt.Sprintf("  ... (%d more lines)", rest))
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

// PlanAPIVersion versions the JSON plan. A consumer must check it.
const PlanAPIVersion = "kubeup.dev/v1alpha1"

type jsonPlan struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Changes    []jsonChange `json:"changes"`
}

type jsonChange struct {
	Key    string      `json:"key"`
	Type   string      `json:"type"`
	Name   string      `json:"name"`
	Action Action      `json:"action"`
	Fields []jsonField `json:"fields"`
}

type jsonField struct {
	Name   string `json:"name"`
	Before any    `json:"before"`
	After  any    `json:"after"`
}

// WriteJSON writes the machine-readable plan: apiVersion and kind, then per change its key, action and each
// field's before and after (null when absent), secrets redacted.
func (p *Plan) WriteJSON(w io.Writer) error {
	out := jsonPlan{APIVersion: PlanAPIVersion, Kind: "Plan", Changes: make([]jsonChange, 0, len(p.Changes))}
	for _, c := range p.Changes {
		jc := jsonChange{Key: c.Key.String(), Type: c.Key.Type, Name: c.Key.Name, Action: c.Action,
			Fields: make([]jsonField, 0, len(c.Fields))}
		for _, f := range c.Fields {
			jc.Fields = append(jc.Fields, jsonField{Name: f.Name, Before: jsonValue(f.Old), After: jsonValue(f.New)})
		}
		out.Changes = append(out.Changes, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
