package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountedTwice finds a volume under two node roots, by device or by the file behind a loop device, and lets
// one node mount a volume twice and anything outside the roots be.
func TestMountsSeenTwice(t *testing.T) {
	roots := []string{"/n/a", "/n/b", "/n/b/inner"}
	backing := func(majmin string) string {
		return map[string]string{"7:1": "/pool/v1.img", "7:2": "/pool/v1.img", "7:3": "/pool/v3.img"}[majmin]
	}
	line := func(id, majmin, at string) string {
		return id + " 1 " + majmin + " / " + at + " rw,relatime shared:1 - ext4 /dev/x rw"
	}
	for _, tt := range []struct {
		name  string
		table []string
		want  string // "" for no double mount, else a part of the message
	}{
		{"nothing", nil, ""},
		{"each volume on one node", []string{line("1", "7:1", "/n/a/mnt/v1"), line("2", "7:3", "/n/b/mnt/v3")}, ""},
		{"twice on one node", []string{line("1", "8:1", "/n/a/mnt/x"), line("2", "8:1", "/n/a/mnt/y")}, ""},
		{"outside the roots", []string{line("1", "8:1", "/n/a/mnt/x"), line("2", "8:1", "/elsewhere"), line("3", "8:1", "/n/ab")}, ""},
		{"no device", []string{line("1", "0:45", "/n/a/mnt/x"), line("2", "0:45", "/n/b/mnt/x")}, ""},
		{"one device on two nodes", []string{line("1", "8:1", "/n/a/mnt/x"), line("2", "8:1", "/n/b/mnt/x")},
			"device 8:1 is mounted on two nodes at once: at /n/a/mnt/x (node root /n/a) and at /n/b/mnt/x (node root /n/b)"},
		{"one image behind two loop devices", []string{line("1", "7:2", "/n/b/mnt/v1"), line("2", "7:1", "/n/a/mnt/v1")},
			"loop file /pool/v1.img is mounted on two nodes at once: at /n/a/mnt/v1 (node root /n/a) and at /n/b/mnt/v1 (node root /n/b)"},
		{"the longest root owns a mount", []string{line("1", "8:1", "/n/b/mnt/x"), line("2", "8:1", "/n/b/inner/mnt/x")},
			"(node root /n/b/inner)"},
		{"escaped mount point", []string{line("1", "8:1", `/n/a/with\040space`), line("2", "8:1", "/n/b/x")},
			"at /n/a/with space (node root /n/a)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := mountedTwice(strings.Join(tt.table, "\n")+"\n", roots, backing)
			switch {
			case tt.want == "" && d != nil:
				t.Errorf("mountedTwice: %s, want nothing", d)
			case tt.want != "" && d == nil:
				t.Errorf("mountedTwice found nothing, want %q", tt.want)
			case tt.want != "" && !strings.Contains(d.String(), tt.want):
				t.Errorf("mountedTwice: %s, want %q in it", d, tt.want)
			}
		})
	}
}

// Machines have a mount table each: a volume under two machines' Dir is found, with the nodes named; one
// mounted outside Dir, or in a machine that is gone, is not.
func TestMachineMountsSeenTwice(t *testing.T) {
	dir := t.TempDir()
	backing := func(majmin string) string {
		return map[string]string{"7:1": "/pool/v1.img", "7:2": "/pool/v1.img"}[majmin]
	}
	table := func(name string, lines ...string) NodeMounts {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return NodeMounts{Node: name, Mountinfo: file, Dir: "/mnt"}
	}
	line := func(majmin, at string) string { return "1 1 " + majmin + " / " + at + " rw shared:1 - ext4 /dev/x rw" }
	a := table("node1", line("7:1", "/mnt/master-v1"))
	b := table("node2", line("7:2", "/mnt/master-v1"))
	c := table("node3", line("7:2", "/var/lib/other"))
	gone := NodeMounts{Node: "node4", Mountinfo: filepath.Join(dir, "gone"), Dir: "/mnt"}
	if d := twice(machinePlaced([]NodeMounts{a, c, gone}, backing)); d != nil {
		t.Errorf("one machine mounts v1 under /mnt: %s", d)
	}
	d := twice(machinePlaced([]NodeMounts{a, b, c, gone}, backing))
	if want := "loop file /pool/v1.img is mounted on two nodes at once: at /mnt/master-v1 (machine node1) and at /mnt/master-v1 (machine node2)"; d == nil || d.String() != want {
		t.Errorf("twice: %v, want %q", d, want)
	}
	if err := mountedMoreThanOnce(machinePlaced([]NodeMounts{a, b}, backing)); err == nil || !strings.Contains(err.Error(), "mounted 2 times") {
		t.Errorf("mountedMoreThanOnce: %v", err)
	}
}
