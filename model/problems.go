package model

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a spec: the field's path (spec.etcdClusters[0].members[2].zone) and what is
// wrong with it, including the fix where there is one.
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// InvalidError is every problem found in one input. It is returned whole, never one problem at a time.
type InvalidError struct {
	// Source names the input: a file name, "cluster demo.example.com" for a spec read from the store.
	Source   string
	Problems []Problem
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 {
		fmt.Fprintf(&b, "%s: %s", e.Source, e.Problems[0])
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %d problems:", e.Source, len(e.Problems))
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	return b.String()
}

// problems collects problems under a path prefix.
type problems struct {
	list []Problem
}

func (ps *problems) add(path, format string, args ...any) {
	ps.list = append(ps.list, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns nil when there is no problem, else an *InvalidError for source.
func (ps *problems) err(source string) error {
	if len(ps.list) == 0 {
		return nil
	}
	return &InvalidError{Source: source, Problems: ps.list}
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }
