package engine

import "strings"

// lineDiff compares two texts line by line (Myers' algorithm) and returns the lines to print: "- old" and
// "+ new" for what changed, with one line of unchanged context around each change ("  line") and "  ..." where
// unchanged lines are left out.
func lineDiff(oldText, newText string) []string {
	ops := diffLines(splitLines(oldText), splitLines(newText))
	const context = 1
	keep := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind == ' ' {
			continue
		}
		for j := max(0, i-context); j <= min(len(ops)-1, i+context); j++ {
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
		out = append(out, string(op.kind)+" "+op.line)
	}
	return out
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
		ops = append(ops, diffOp{' ', l})
	}
	midA, midB := a[pre:len(a)-suf], b[pre:len(b)-suf]
	switch {
	case len(midA) == 0:
		for _, l := range midB {
			ops = append(ops, diffOp{'+', l})
		}
	case len(midB) == 0:
		for _, l := range midA {
			ops = append(ops, diffOp{'-', l})
		}
	default:
		ops = append(ops, myers(midA, midB)...)
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
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
			ops = append(ops, diffOp{' ', a[x]})
		}
		if x == prevX {
			y--
			ops = append(ops, diffOp{'+', b[y]})
		} else {
			x--
			ops = append(ops, diffOp{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		ops = append(ops, diffOp{' ', a[x]})
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}
