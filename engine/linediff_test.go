package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLineDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"one line changed", "old line\n", "new line\n", []string{"- old line", "+ new line"}},
		{"create", "", "a\nb\n", []string{"+ a", "+ b"}},
		{"delete", "a\nb\n", "", []string{"- a", "- b"}},
		{"identical", "a\nb\n", "a\nb\n", nil},
		{"three lines of context around a change", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			[]string{"  2", "  3", "  4", "- 5", "+ five", "  6", "  7", "  8"}},
		{"distant changes are separate hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "one\n2\n3\n4\n5\n6\n7\n8\nnine\n",
			[]string{"- 1", "+ one", "  2", "  3", "  4", "  ...", "  6", "  7", "  8", "- 9", "+ nine"}},
		{"a flag line is diffed by flag", "# kubelet's flags\nDAEMON_ARGS=\"--a=1 --max-pods=110 --z\"\n",
			"# kubelet's flags\nDAEMON_ARGS=\"--a=1 --max-pods=120 --z --new\"\n",
			[]string{"  # kubelet's flags", "~ DAEMON_ARGS", "    - --max-pods=110", "    + --max-pods=120", "    + --new"}},
		{"flag lines of different variables are lines", "A=\"--x\"\n", "B=\"--x\"\n", []string{"- A=\"--x\"", "+ B=\"--x\""}},
		{"a flag line among other changes", "x\nOPTS=--a --b\n", "y\nOPTS=--a\n",
			[]string{"- x", "~ OPTS", "    - --b", "+ y"}},
		{"insertion in the middle", "a\nc\n", "a\nb\nc\n", []string{"  a", "+ b", "  c"}},
		{"missing final newline is not a line", "a\nb", "a\nb\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, lineDiff(tt.old, tt.new)); diff != "" {
				t.Errorf("lineDiff (-want +got):\n%s", diff)
			}
		})
	}
}

// Every edit script must turn the old text into the new one, with as few edits as an LCS allows.
func TestMyersIsMinimal(t *testing.T) {
	pairs := [][2]string{
		{"abcabba", "cbabac"}, {"", "xyz"}, {"xyz", ""}, {"aaaa", "aa"}, {"abcdef", "fedcba"}, {"kitten", "sitting"},
	}
	for _, p := range pairs {
		a, b := strings.Split(p[0], ""), strings.Split(p[1], "")
		if p[0] == "" {
			a = nil
		}
		if p[1] == "" {
			b = nil
		}
		ops := myers(a, b)
		var gotA, gotB []string
		edits := 0
		for _, op := range ops {
			if op.kind != '+' {
				gotA = append(gotA, op.line)
			}
			if op.kind != '-' {
				gotB = append(gotB, op.line)
			}
			if op.kind != ' ' {
				edits++
			}
		}
		if !cmp.Equal(a, gotA, cmpEmpty) || !cmp.Equal(b, gotB, cmpEmpty) {
			t.Errorf("%q -> %q: script does not reproduce both sides: %v", p[0], p[1], ops)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Errorf("%q -> %q: %d edits, want the minimum %d", p[0], p[1], edits, want)
		}
	}
}

var cmpEmpty = cmp.Comparer(func(x, y []string) bool { return strings.Join(x, "\x00") == strings.Join(y, "\x00") })

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}
