package nodeup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSelfUnitControlCharacters: a --conf path holding a carriage return, a newline or another control
// character is written escaped inside the quoted word of ExecStart=: the unit has the lines it always has and
// no other (a raw \r ended the line for systemd, and what followed became a directive of its own).
func TestSelfUnitControlCharacters(t *testing.T) {
	plain, err := selfUnitDefinition("/etc/kubeup/nodeup.conf", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		conf, exec string
	}{
		{"/etc/kube\rup/nodeup.conf", `/usr/local/bin/nodeup "--conf=/etc/kube\rup/nodeup.conf"`},
		{"/x\r\nExecStartPre=/bin/sh -c id", `/usr/local/bin/nodeup "--conf=/x\r\nExecStartPre=/bin/sh -c id"`},
		{"/x\x01\x1b\x7f\v\f", `/usr/local/bin/nodeup "--conf=/x\x01\x1b\x7f\x0b\x0c"`},
	}
	for _, tt := range tests {
		unit, err := selfUnitDefinition(tt.conf, 0, "")
		if err != nil {
			t.Errorf("%q: %v", tt.conf, err)
			continue
		}
		if strings.ContainsAny(unit, "\r\x01\x1b\x7f\v\f") {
			t.Errorf("%q: the unit holds a raw control character:\n%q", tt.conf, unit)
		}
		want := strings.Replace(plain, "ExecStart=/usr/local/bin/nodeup --conf=/etc/kubeup/nodeup.conf\n", "ExecStart="+tt.exec+"\n", 1)
		if unit != want {
			t.Errorf("%q: unit\n%q\nwant\n%q", tt.conf, unit, want)
		}
	}
}

// TestSelfUnitRefusesUnwritableConf: a --conf that no unit can hold (not UTF-8, a byte order mark) is refused
// with the reason, in a dry run and an apply, before any run (nothing on the node changed), and not retried.
func TestSelfUnitRefusesUnwritableConf(t *testing.T) {
	for _, name := range []string{"node\xff.conf", "node\ufeff.conf"} {
		root := t.TempDir()
		conf := writeConf(t, filepath.Join(root, "etc/kubeup"), name, nodeConfig(t, "nodes"))
		before := treeHash(t, root)
		for _, dry := range []bool{true, false} {
			r := run(t, Options{Conf: conf, Root: root, DryRun: dry, Retries: 3, InstallSystemdUnit: true, Executable: smallExecutable(t)})
			var ce *ConfigError
			if !errors.As(r.runErr, &ce) || retryable(r.runErr) {
				t.Fatalf("%q, dry run %t: error %v, want a *ConfigError (not retried)", name, dry, r.runErr)
			}
			for _, want := range []string{"--install-systemd-unit: --conf", "cannot be written into kubeup-nodeup.service", "nothing was changed"} {
				if !strings.Contains(r.runErr.Error(), want) {
					t.Errorf("%q, dry run %t: error %q does not say %q", name, dry, r.runErr, want)
				}
			}
			if got := treeHash(t, root); got != before {
				t.Errorf("%q, dry run %t: the tree changed:\n%s", name, dry, got)
			}
		}
		if _, err := selfUnitDefinition("/etc/kubeup/"+name, 0, ""); err == nil {
			t.Errorf("selfUnitDefinition accepted %q", name)
		}
	}
}

// TestInstallSystemdUnitCarriageReturn: nodeup installs its unit for a configuration whose path holds a
// carriage return, and the unit names exactly that path.
func TestInstallSystemdUnitCarriageReturn(t *testing.T) {
	root := t.TempDir()
	conf := writeConf(t, filepath.Join(root, "etc/kube\rup"), "nodeup.conf", nodeConfig(t, "nodes"))
	if r := run(t, Options{Conf: conf, Root: root, InstallSystemdUnit: true, Executable: smallExecutable(t)}); r.runErr != nil {
		t.Fatalf("apply: %v", r.runErr)
	}
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system", UnitName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(unit), "\r") {
		t.Errorf("the unit holds a raw carriage return:\n%q", unit)
	}
	if want := "\nExecStart=/usr/local/bin/nodeup \"--conf=/etc/kube\\rup/nodeup.conf\"\n"; !strings.Contains(string(unit), want) {
		t.Errorf("unit:\n%s\nwant it to contain %q", unit, want)
	}
}
