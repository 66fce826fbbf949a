package model

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// hostileValues are values an attacker or a careless operator might put in any string field of the spec: each
// must either be refused (by validation, and by the builders on their own) or reach the component as exactly the
// one argument it is part of.
var hostileValues = []string{
	"x\"\nLD_PRELOAD=/tmp/evil.so\n#", // the reported injection into /etc/default/kubelet
	`a"b`,
	"a'b",
	"a\nb",
	"a\rb",
	"a\tb",
	"a b",
	"Foo --v=10 --bad",
	"--v=10",
	"a$b",
	"a${PATH}b",
	"$DAEMON_ARGS",
	"a%hb",
	"a%%b",
	`a\b`,
	`a\`,
	"a`id`b",
	"a;b",
	"#a",
	"a,b=c",
	"a\x00b",
	"\xff",
	"é",
}

// TestEnvAssignmentRoundTrips checks the environment-file writer on its own: any value without a NUL byte, in
// valid UTF-8, is read back by systemd's rules as exactly that value of exactly that one variable.
func TestEnvAssignmentRoundTrips(t *testing.T) {
	values := append(slices.Clone(hostileValues), "", " lead", "trail ", "two\n\nlines\n", `\"\\`, "'", "\"", "\\\n")
	for _, v := range values {
		t.Run(strconv.Quote(v), func(t *testing.T) {
			line, err := envAssignment("VALUE", v)
			if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
				if err == nil {
					t.Errorf("envAssignment accepted %q, which systemd cannot read", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			text := "# comment\nBEFORE=1\n" + line + "AFTER=2\n"
			vars, err := parseEnvFile(text)
			if err != nil {
				t.Fatal(err)
			}
			want := []envVar{{"BEFORE", "1"}, {"VALUE", v}, {"AFTER", "2"}}
			if diff := cmp.Diff(want, vars); diff != "" {
				t.Errorf("read back (-want +got):\n%s\nfile:\n%s", diff, text)
			}
		})
	}
	if _, err := envAssignment("A B", "x"); err == nil {
		t.Error("envAssignment accepted the variable name \"A B\"")
	}
}

// TestExecArgRoundTrips checks the command-line writer on its own: any value without a NUL byte, in valid UTF-8,
// is read back by systemd's rules as exactly one argument, that value: specifiers, variables and quotes are
// escaped.
func TestExecArgRoundTrips(t *testing.T) {
	values := append(slices.Clone(hostileValues), "", "plain", "/usr/local/bin/kubelet", "--conf=/etc/kubeup/protokube.yaml", "%%", "$$")
	for _, v := range values {
		t.Run(strconv.Quote(v), func(t *testing.T) {
			arg, err := execArg(v)
			if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
				if err == nil {
					t.Errorf("execArg accepted %q, which systemd cannot read", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			line := "/bin/true " + arg + " last"
			words, err := parseCommandLine(line)
			if err != nil {
				t.Fatal(err)
			}
			got := expandCommandLine(t, words, map[string]string{"PATH": "/usr/bin", "DAEMON_ARGS": "--evil"})
			if diff := cmp.Diff([]string{"/bin/true", v, "last"}, got); diff != "" {
				t.Errorf("ExecStart=%s read back (-want +got):\n%s", line, diff)
			}
		})
	}
}
