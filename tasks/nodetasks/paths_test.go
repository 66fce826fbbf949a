package nodetasks

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// resolveDirect answers only for a clean path with every component there and no link on the way (nor at the
// end, when the end is followed), and then as the walk does; every other path is left to the walk.
func TestResolveDirectAgreesWithTheWalk(t *testing.T) {
	n := testNode(t, map[string]string{
		"/etc/kubernetes/manifests/etcd.manifest": "pod",
		"/etc/kubernetes/admin.conf":              "conf",
		"/etc/localtime":                          "->/usr/share/zoneinfo/UTC",
		"/usr/share/zoneinfo/UTC":                 "tz",
		"/var/run":                                "->/run",
		"/run/x.pid":                              "1",
		"/etc/rel":                                "->kubernetes",
		"/etc/dangling":                           "->/nowhere",
	})
	if err := os.Mkdir(filepath.Join(n.Root, "etc/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		followLast bool
		direct     bool // whether resolveDirect answers
	}{
		{path: "/", direct: true},
		{path: "/etc", direct: true},
		{path: "/etc/empty", direct: true},
		{path: "/etc/kubernetes/manifests/etcd.manifest", direct: true},
		{path: "/etc/kubernetes/manifests/etcd.manifest", followLast: true, direct: true},
		{path: "/etc/kubernetes/admin.conf", direct: true},
		{path: "/etc/localtime", direct: true}, // the link itself
		{path: "/etc/localtime", followLast: true},
		{path: "/etc/dangling", direct: true},
		{path: "/etc/dangling", followLast: true},
		{path: "/var/run/x.pid"},                        // a link on the way
		{path: "/etc/rel/admin.conf", followLast: true}, // a relative one
		{path: "/etc/kubernetes/missing.conf"},          // missing at the end
		{path: "/etc/missing/dir/file"},                 // missing on the way
		{path: "/etc/kubernetes/admin.conf/x"},          // a file on the way
		{path: "/etc//kubernetes/admin.conf"},           // not clean
		{path: "/etc/./kubernetes/admin.conf"},
		{path: "/etc/kubernetes/"},
	}
	for _, tt := range tests {
		name := tt.path
		if tt.followLast {
			name += ", followed"
		}
		t.Run(name, func(t *testing.T) {
			rel, ok := n.resolveDirect(tt.path, tt.followLast)
			if ok != tt.direct {
				t.Fatalf("resolveDirect(%q, %v) = %q, %v; want ok %v", tt.path, tt.followLast, rel, ok, tt.direct)
			}
			walked, werr := n.resolveWalk(tt.path, tt.followLast, false)
			if ok && (werr != nil || walked != rel) {
				t.Errorf("resolveDirect(%q) = %q; the walk: %q, %v", tt.path, rel, walked, werr)
			}
			got, err := n.resolve(tt.path, tt.followLast, false)
			if got != walked || (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
				t.Errorf("resolve(%q) = %q, %v; the walk: %q, %v", tt.path, got, err, walked, werr)
			}
		})
	}
}

// openNodeFile's direct open reads what the walk reads, and leaves to the walk what it refuses: a link out of
// the root, a directory, a FIFO.
func TestOpenNodeFile(t *testing.T) {
	n := testNode(t, map[string]string{
		"/etc/kubernetes/admin.conf": "conf",
		"/etc/kubernetes/link.conf":  "->admin.conf",
		"/etc/abs.conf":              "->/etc/kubernetes/admin.conf",
		"/var/run":                   "->/run",
		"/run/x.pid":                 "1",
	})
	out := secretOutside(t)
	symlink(t, n, "/etc/out.conf", climbTo(t, n, "/etc/out.conf", out))
	if err := unix.Mkfifo(filepath.Join(n.Root, "etc/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		followLast bool
		want       string // the contents, or "error: " and what the error says
	}{
		{path: "/etc/kubernetes/admin.conf", want: "conf"},
		{path: "/etc/kubernetes/link.conf", followLast: true, want: "conf"},
		{path: "/etc/abs.conf", followLast: true, want: "conf"},
		{path: "/var/run/x.pid", want: "1"},
		{path: "/etc/kubernetes/link.conf", want: "error: a symbolic link appeared"},
		{path: "/etc/out.conf", followLast: true, want: "error: escapes the node root"},
		{path: "/etc/kubernetes", want: "error: is a directory, not a regular file"},
		{path: "/etc/fifo", want: "error: is a named pipe, not a regular file"},
		{path: "/etc/missing", want: "error: no such file or directory"},
		{path: "etc/kubernetes/admin.conf", want: "error: is not absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f, err := n.openNodeFile(tt.path, tt.followLast)
			got := ""
			if err != nil {
				got = "error: " + err.Error()
			} else {
				b, rerr := io.ReadAll(f)
				f.Close()
				if rerr != nil {
					t.Fatal(rerr)
				}
				got = string(b)
			}
			if wantErr, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
				if !strings.Contains(got, wantErr) {
					t.Errorf("openNodeFile(%q) = %q, want an error saying %q", tt.path, got, wantErr)
				}
			} else if got != tt.want {
				t.Errorf("openNodeFile(%q) read %q, want %q", tt.path, got, tt.want)
			}
			if strings.Contains(got, "SECRET") {
				t.Errorf("openNodeFile(%q) read what is outside the root", tt.path)
			}
		})
	}
}

// readComparing tells a file that holds the wanted bytes from one that does not by every byte, whatever their
// sizes, and hands back what a file holds when it differs.
func TestReadComparing(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 20000) // larger than one read, and than the pooled buffers' start
	tests := []struct {
		name, file, want string
		same             bool
	}{
		{name: "same", file: "a: 1\n", want: "a: 1\n", same: true},
		{name: "empty, want empty", file: "", want: "", same: true},
		{name: "one byte differs", file: "a: 2\n", want: "a: 1\n"},
		{name: "longer", file: "a: 1\nb: 2\n", want: "a: 1\n"},
		{name: "shorter", file: "a: 1\n", want: "a: 1\nb: 2\n"},
		{name: "empty, want some", file: "", want: "a"},
		{name: "big, same", file: big, want: big, same: true},
		{name: "big, last byte differs", file: big[:len(big)-1] + "X", want: big},
		{name: "small after big", file: "x", want: "x", same: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			// The size is a hint: a file that grew or shrank since fstat is read to its end all the same.
			for _, hint := range []int64{int64(len(tt.file)), 0, int64(len(tt.file) / 2), int64(len(tt.file)) + 100} {
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				got, same, err := readComparing(int(f.Fd()), hint, tt.want)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if same != tt.same {
					t.Errorf("size hint %d: same = %v, want %v", hint, same, tt.same)
				}
				if !same && got != tt.file {
					t.Errorf("size hint %d: got %d bytes, want the file's %d", hint, len(got), len(tt.file))
				}
			}
		})
	}
}

// lstatNode sees what os.Lstat sees of the host path: type, permission and special bits, owner and group; a link
// at the end is the link, and nothing there is not an error.
func TestLstatNode(t *testing.T) {
	n := testNode(t, map[string]string{
		"/etc/kubernetes/admin.conf": "conf",
		"/etc/link":                  "->kubernetes/admin.conf",
		"/etc/dangling":              "->/nowhere",
		"/var/run":                   "->/run",
		"/run/x.pid":                 "1",
		"/usr/bin/su":                "",
	})
	host := func(p string) string { return filepath.Join(n.Root, p) }
	if err := os.Chmod(host("/usr/bin/su"), 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(host("/usr/bin"), 0o1777|os.ModeSticky|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(host("/etc/kubernetes/admin.conf"), meUID, meGID); err != nil && os.Getuid() == 0 {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(host("/etc/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{"/", "/etc", "/etc/kubernetes/admin.conf", "/etc/link", "/etc/dangling", "/var/run", "/var/run/x.pid",
		"/usr/bin/su", "/usr/bin", "/etc/fifo", "/etc/missing", "/etc/missing/x"}
	if os.Getuid() == 0 { // a device needs root to be made
		if err := os.MkdirAll(host("/dev"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mknod(host("/dev/null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, "/dev/null")
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			got, ok, err := n.lstatNode(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, err := n.resolveWalk(p, false, false)
			if err != nil {
				t.Fatal(err)
			}
			fi, lerr := os.Lstat(filepath.Join(n.Root, rel))
			if os.IsNotExist(lerr) {
				if ok {
					t.Errorf("lstatNode(%q) = %+v, want nothing there", p, got)
				}
				return
			}
			if lerr != nil {
				t.Fatal(lerr)
			}
			if want := statOf(fi); !ok || *got != *want {
				t.Errorf("lstatNode(%q) = %+v, %v; os.Lstat: %+v", p, got, ok, want)
			}
		})
	}
}
