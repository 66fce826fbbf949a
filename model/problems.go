package model

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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
	args = slices.Clone(args)
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > MaxEcho {
			args[i] = echoed(s) // quoted, it is a value from the input: never printed whole
		}
	}
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxMessage { // a value put in it by a helper that formatted it first
		n := maxMessage
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		msg = fmt.Sprintf("%s... (cut: %d bytes)", msg[:n], len(msg))
	}
	ps.list = append(ps.list, Problem{Path: path, Message: msg})
}

// maxMessage is the longest problem message, in bytes: longer, it holds a value of the input no helper cut.
const maxMessage = 2048

// MaxEcho is the most of a value from the input (a name, a field's value) that a message repeats, in bytes: a
// 900 KB value was printed whole. A DNS name (at most 253) is repeated whole.
const MaxEcho = 256

// Echo is how a message repeats a value the user gave: quoted as Go quotes it (a control character such as ESC
// is written as an escape, never sent to the terminal), and cut after MaxEcho bytes, saying how long it was:
// "aaaa..."... (900000 bytes).
func Echo(s string) string { return fmt.Sprintf("%q", echoed(s)) }

// echoed formats a value from the input for a message: %q quotes it and cuts it after MaxEcho bytes (on a
// character's boundary), adding its length; other verbs print it whole (what a message says, not the input).
type echoed string

func (e echoed) Format(f fmt.State, verb rune) {
	s, cut := string(e), ""
	if verb != 'q' {
		io.WriteString(f, s)
		return
	}
	if len(s) > MaxEcho {
		n := MaxEcho
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], fmt.Sprintf("... (%d bytes)", len(e))
	}
	io.WriteString(f, strconv.Quote(s)+cut)
}

// err returns nil when there is no problem, else an *InvalidError for source.
func (ps *problems) err(source string) error {
	if len(ps.list) == 0 {
		return nil
	}
	return &InvalidError{Source: source, Problems: ps.list}
}

func Index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }
