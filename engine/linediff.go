package engine

import "strings"

// lineContext is how many unchanged lines a line diff shows around each change.
const lineContext = 3

// lineDiff compares two texts line by line (Myers' algorithm) and returns the lines to print: "- old" and
// "+ new" for what changed, with three lines of unchanged context around each change ("  line") and "  ..."
// where unchanged lines are left out. A line that assigns a list of flags to a variable (DAEMON_ARGS="--a --b")
// and is replaced by another assignment of the same variable is shown flag by flag: "~ DAEMON_ARGS", then
// "    - --flag" and "    + --flag" for each flag removed and added.
func lineDiff(oldText, newText string) []string {
	ops := flagLines(diffLines(splitLines(oldText), splitLines(newText)))
	keep := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind == ' ' {
			continue
		}
		for j := max(0, i-lineContext); j <= min(len(ops)-1, i+lineContext); j++ {
			keep[j] = true
		}
	}
	var out []string
	skipped := false
	for i, op := range ops {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped && len(out) > 0 {
			out = append(out, "  ...")
		}
		skipped = false
		if op.kind == '~' {
			out = append(out, "~ "+op.line)
			out = append(out, op.flags...)
			continue
		}
		out = append(out, string(op.kind)+" "+op.line)
	}
	return out
}

// flagLines replaces each removed line that assigns flags to a variable, and the added line that assigns the
// same variable in the same run of changes, by one '~' op that lists the flags removed and added.
func flagLines(ops []diffOp) []diffOp {
	out := make([]diffOp, 0, len(ops))
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			out = append(out, ops[i])
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind != ' ' {
			j++
		}
		out = append(out, pairFlagLines(ops[i:j])...)
		i = j
	}
	return out
}

// pairFlagLines folds, within one run of changed lines, a removed and an added assignment of the same variable
// into one '~' op at the removed line's place.
func pairFlagLines(run []diffOp) []diffOp {
	addedAt := map[string]int{} // variable -> index in run of the line that assigns it anew
	for i, op := range run {
		if name, _, ok := flagAssignment(op.line); ok && op.kind == '+' {
			if _, dup := addedAt[name]; dup {
				return run
			}
			addedAt[name] = i
		}
	}
	pairOf := map[int]int{} // removed line -> added line
	folded := map[int]bool{}
	for i, op := range run {
		if name, _, ok := flagAssignment(op.line); ok && op.kind == '-' {
			if j, found := addedAt[name]; found && !folded[j] {
				pairOf[i], folded[j] = j, true
			}
		}
	}
	out := make([]diffOp, 0, len(run))
	for i, op := range run {
		j, paired := pairOf[i]
		switch {
		case folded[i]:
		case !paired:
			out = append(out, op)
		default:
			name, oldFlags, _ := flagAssignment(op.line)
			_, newFlags, _ := flagAssignment(run[j].line)
			removed, added := flagDiff(oldFlags, newFlags)
			flags := make([]string, 0, len(removed)+len(added))
			for _, f := range removed {
				flags = append(flags, "    - "+f)
			}
			for _, f := range added {
				flags = append(flags, "    + "+f)
			}
			out = append(out, diffOp{kind: '~', line: name, flags: flags})
		}
	}
	return out
}

// flagAssignment reads a line NAME="words" (or NAME=words) whose words include a flag ("-x", "--x"): the
// variable's name and its words.
func flagAssignment(line string) (name string, words []string, ok bool) {
	name, value, found := strings.Cut(line, "=")
	if !found || name == "" || strings.ContainsAny(name, " \t\"'") {
		return "", nil, false
	}
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = value[1 : len(value)-1]
	}
	words = strings.Fields(value)
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			return name, words, true
		}
	}
	return "", nil, false
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffLines is myers on what lies between the common first and last lines; a creation or deletion is linear.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{kind: ' ', line: l})
	}
	midA, midB := a[pre:len(a)-suf], b[pre:len(b)-suf]
	switch {
	case len(midA) == 0:
		for _, l := range midB {
			ops = append(ops, diffOp{kind: '+', line: l})
		}
	case len(midB) == 0:
		for _, l := range midA {
			ops = append(ops, diffOp{kind: '-', line: l})
		}
	default:
		ops = append(ops, myers(midA, midB)...)
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{kind: ' ', line: l})
	}
	return ops
}

type diffOp struct {
	kind  byte // ' ', '-', '+'; '~' for a flag line replaced (flagLines)
	line  string
	flags []string // of a '~' op: its printed flag lines
}

// myers returns an edit script from a to b with the fewest insertions and deletions.
func myers(a, b []string) []diffOp {
	n, m := len(a), len(b)
	maxD := n + m
	offset := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d]: v[offset-d-1 .. offset+d+1] before step d, all that backtrack reads
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v[max(0, offset-d-1):min(len(v), offset+d+2)]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[offset+k-1] < v[offset+k+1]) {
				x = v[offset+k+1] // down: insertion
			} else {
				x = v[offset+k-1] + 1 // right: deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[offset+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace, d)
			}
		}
	}
	return nil
}

func backtrack(a, b []string, trace [][]int, d int) []diffOp {
	var ops []diffOp
	x, y := len(a), len(b)
	for ; d > 0; d-- {
		v := trace[d]
		at := func(k int) int { return v[k+d+1] } // v holds diagonals -d-1 .. d+1
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			ops = append(ops, diffOp{kind: ' ', line: a[x]})
		}
		if x == prevX {
			y--
			ops = append(ops, diffOp{kind: '+', line: b[y]})
		} else {
			x--
			ops = append(ops, diffOp{kind: '-', line: a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		ops = append(ops, diffOp{kind: ' ', line: a[x]})
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}
