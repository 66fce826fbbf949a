package e2e

import (
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
