package nodeup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// controlPlaneFiles are what a control-plane node holds after nodeup, under its root.
var controlPlaneFiles = []string{
	"etc/default/kubelet",
	"etc/systemd/system/kubelet.service",
	"etc/systemd/system/protokube.service",
	"etc/kubeup/node.conf",
	"etc/kubernetes/manifests/kube-apiserver.manifest",
	"etc/kubernetes/manifests/kube-controller-manager.manifest",
	"etc/kubernetes/manifests/kube-scheduler.manifest",
	"etc/kubernetes/manifests/kube-proxy.manifest",
}

// TestControlPlane is the acceptance path: a dry run lists the kubelet unit and the static pods and writes
// nothing; an apply writes them; the next dry run has nothing to do, and so has the next apply.
func TestControlPlane(t *testing.T) {
	conf := writeConf(t, t.TempDir(), "control-plane-a", nodeConfig(t, "control-plane-a"))
	root := t.TempDir()
	empty := treeHash(t, root)

	r := run(t, Options{Conf: conf, Root: root, DryRun: true})
	if r.runErr != nil {
		t.Fatalf("dry run: %v\n%s", r.runErr, r.err)
	}
	for _, want := range []string{"Will create resources:", "SystemdService/kubelet.service", "SystemdService/protokube.service",
		"File//etc/default/kubelet", "Run nodeup without --dryrun to apply these changes\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("dry run printed:\n%s\nwant it to contain %q", r.out, want)
		}
	}
	if n := strings.Count(r.out, "  ManifestFile//etc/kubernetes/manifests/"); n < 3 {
		t.Errorf("dry run lists %d static-pod manifests, want at least 3:\n%s", n, r.out)
	}
	if strings.Contains(r.out, "--yes") {
		t.Errorf("dry run mentions --yes, which nodeup does not have:\n%s", r.out)
	}
	wantNote := "nodeup: no systemd runs in " + root + ": managing unit files only (services are not started, stopped or restarted)\n"
	if r.err != wantNote {
		t.Errorf("dry run printed on stderr:\n%s\nwant exactly the one line:\n%s", r.err, wantNote)
	}
	if got := treeHash(t, root); got != empty {
		t.Fatalf("the dry run changed the tree:\n%s", got)
	}

	r = run(t, Options{Conf: conf, Root: root})
	if r.runErr != nil {
		t.Fatalf("apply: %v\n%s", r.runErr, r.err)
	}
	if !strings.HasPrefix(r.out, "Applied ") || !strings.Contains(r.out, "  created  SystemdService/kubelet.service\n") {
		t.Errorf("apply printed:\n%s\nwant the list of changes", r.out)
	}
	for _, f := range controlPlaneFiles {
		if st, err := os.Stat(filepath.Join(root, f)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("after apply: %s: %v", f, err)
		}
	}
	applied := treeHash(t, root)

	r = run(t, Options{Conf: conf, Root: root, DryRun: true})
	if r.runErr != nil || r.out != "No changes need to be applied\n" {
		t.Errorf("dry run after apply: err %v, printed:\n%s\nwant: No changes need to be applied", r.runErr, r.out)
	}
	r = run(t, Options{Conf: conf, Root: root})
	if r.runErr != nil || r.out != "No changes were needed\n" {
		t.Errorf("second apply: err %v, printed:\n%s\nwant: No changes were needed", r.runErr, r.out)
	}
	if got := treeHash(t, root); got != applied {
		t.Errorf("the second apply changed the tree:\nbefore:\n%s\nafter:\n%s", applied, got)
	}
}

func TestWorkerNode(t *testing.T) {
	conf := writeConf(t, t.TempDir(), "nodes", nodeConfig(t, "nodes"))
	root := t.TempDir()
	r := run(t, Options{Conf: "file://" + conf, Root: root})
	if r.runErr != nil {
		t.Fatalf("apply: %v\n%s", r.runErr, r.err)
	}
	// A local cluster's worker runs protokube (its routes to the other nodes' pod ranges), from node.conf.
	for _, f := range []string{"etc/systemd/system/kubelet.service", "etc/kubernetes/manifests/kube-proxy.manifest",
		"etc/systemd/system/protokube.service", "etc/kubeup/node.conf"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("after apply: %v", err)
		}
	}
	for _, f := range []string{"etc/kubernetes/manifests/kube-apiserver.manifest"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("after apply: a worker node has %s", f)
		}
	}
}

// TestDryRunMissingRoot: a dry run of a root that does not exist plans everything and creates nothing; the apply
// creates the root.
func TestDryRunMissingRoot(t *testing.T) {
	conf := writeConf(t, t.TempDir(), "conf", nodeConfig(t, "control-plane-a"))
	root := filepath.Join(t.TempDir(), "n")
	r := run(t, Options{Conf: conf, Root: root, DryRun: true})
	if r.runErr != nil {
		t.Fatalf("dry run: %v", r.runErr)
	}
	if !strings.Contains(r.out, "SystemdService/kubelet.service") {
		t.Errorf("dry run printed:\n%s\nwant kubelet.service", r.out)
	}
	if strings.Count(r.err, "\n") != 1 || !strings.Contains(r.err, "does not exist yet") {
		t.Errorf("dry run printed on stderr:\n%s\nwant one line saying the root does not exist yet", r.err)
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dry run created the root: %v", err)
	}
	if r := run(t, Options{Conf: conf, Root: root}); r.runErr != nil {
		t.Fatalf("apply: %v", r.runErr)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/systemd/system/kubelet.service")); err != nil {
		t.Error(err)
	}
}

// A dry run with a failure prints the plan of every task that could be planned, saying it is incomplete, and
// fails with the failure (it printed no plan at all).
func TestFailedDryRunPrintsWhatCouldBePlanned(t *testing.T) {
	conf := writeConf(t, t.TempDir(), "conf", nodeConfig(t, "nodes"))
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	// /etc/default is a file: /etc/default/kubelet cannot be read.
	if err := os.WriteFile(filepath.Join(root, "etc/default"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, Options{Conf: conf, Root: root, DryRun: true})
	if r.runErr == nil || !strings.Contains(r.runErr.Error(), "/etc/default/kubelet") {
		t.Fatalf("dry run error %v, want one naming /etc/default/kubelet", r.runErr)
	}
	for _, want := range []string{"Will create resources:\n", "ManifestFile//etc/kubernetes/manifests/kube-proxy.manifest", "The plan is incomplete: "} {
		if !strings.Contains(r.out, want) {
			t.Errorf("dry run printed:\n%s\nwant %q", r.out, want)
		}
	}
	if strings.Contains(r.out, "Run nodeup without --dryrun") {
		t.Errorf("an incomplete plan says how to apply it:\n%s", r.out)
	}
}

// TestBadConfiguration: whatever is wrong with the configuration, nodeup refuses it with a message that names
// the file and the fix, never retries, and changes nothing under the root: not even with an invalid spec that
// only the node's graph would trip over half way.
func TestBadConfiguration(t *testing.T) {
	obj := nodeConfig(t, "control-plane-a")
	body := unseal(t, obj)
	changedByte := bytes.Clone(obj)
	changedByte[len(changedByte)/2] ^= 0x01
	// edited is the configuration with the YAML changed and sealed again: the sha256 matches, the spec does not.
	edited := func(old, new string) []byte {
		t.Helper()
		if !bytes.Contains(body, []byte(old)) {
			t.Fatalf("the configuration has no %q", old)
		}
		return seal(bytes.Replace(body, []byte(old), []byte(new), 1))
	}

	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns --conf
		want  []string
	}{
		{
			name:  "missing",
			setup: func(t *testing.T, dir string) string { return filepath.Join(dir, "absent") },
			want:  []string{"absent does not exist", "kubeup update cluster --yes"},
		},
		{
			name: "an older kubeup's, with a .sha256 beside it",
			setup: func(t *testing.T, dir string) string {
				writeConf(t, dir, "conf.sha256", []byte(sha256Of(body)+"\n"))
				return writeConf(t, dir, "conf", body)
			},
			want: []string{"conf: the first line is not \"# sha256:\"", "separate .sha256 object", "kubeup update cluster --yes"},
		},
		{
			name:  "one byte changed",
			setup: func(t *testing.T, dir string) string { return writeConf(t, dir, "conf", changedByte) },
			want: []string{"node configuration ", "/etc/kubeup/conf: content does not match its sha256", sha256Of(unseal(t, changedByte)),
				"still so after waiting 1ms", "kubeup update cluster --yes"},
		},
		{
			name:  "truncated",
			setup: func(t *testing.T, dir string) string { return writeConf(t, dir, "conf", obj[:len(obj)-10]) },
			want:  []string{"content does not match its sha256", "tail -n +2"},
		},
		{
			name: "malformed",
			setup: func(t *testing.T, dir string) string {
				return writeConf(t, dir, "conf", seal([]byte("apiVersion: [\n")))
			},
			want: []string{"conf: malformed YAML", "same version as the kubeup"},
		},
		{
			name: "unknown field",
			setup: func(t *testing.T, dir string) string {
				return writeConf(t, dir, "conf", seal(append(bytes.Clone(body), "futureField: 1\n"...)))
			},
			want: []string{"conf: futureField", "same version as the kubeup"},
		},
		{
			name: "not a node configuration",
			setup: func(t *testing.T, dir string) string {
				return writeConf(t, dir, "conf", edited("kind: NodeConfig", "kind: Cluster"))
			},
			want: []string{"conf: kind \"Cluster\""},
		},
		{
			// nodeup would apply it and drop the control-plane taint.
			name: "role Bogus",
			setup: func(t *testing.T, dir string) string {
				return writeConf(t, dir, "conf", edited("role: ControlPlane", "role: Bogus"))
			},
			want: []string{"instancegroup/control-plane-a: spec.role: \"Bogus\" is not a role"},
		},
		{
			// /etc/default/kubelet was written before the manifests' directory was refused.
			name: "relative podManifestPath",
			setup: func(t *testing.T, dir string) string {
				return writeConf(t, dir, "conf", edited("podManifestPath: /etc/kubernetes/manifests", "podManifestPath: etc/kubernetes/manifests"))
			},
			want: []string{"podManifestPath", "etc/kubernetes/manifests"},
		},
		{
			name: "podManifestPath with ..",
			setup: func(t *testing.T, dir string) string {
				return writeConf(t, dir, "conf", edited("podManifestPath: /etc/kubernetes/manifests", "podManifestPath: /etc/kubernetes/../../manifests"))
			},
			want: []string{"podManifestPath", "/etc/kubernetes/../../manifests"},
		},
		{
			name:  "a directory",
			setup: func(t *testing.T, dir string) string { return dir },
			want:  []string{"reading the node configuration", "check --conf"},
		},
		{
			name:  "no --conf",
			setup: func(t *testing.T, dir string) string { return "" },
			want:  []string{"--conf is required"},
		},
		{
			name:  "unsupported scheme",
			setup: func(t *testing.T, dir string) string { return "https://example.com/conf" },
			want:  []string{`unsupported scheme "https"`},
		},
		{
			name:  "s3 without key",
			setup: func(t *testing.T, dir string) string { return "s3://bucket" },
			want:  []string{"want s3://bucket/key"},
		},
	}
	for _, tt := range tests {
		for _, dryRun := range []bool{false, true} {
			name := tt.name
			if dryRun {
				name += " dry run"
			}
			t.Run(name, func(t *testing.T) {
				root := t.TempDir()
				dir := filepath.Join(root, "etc/kubeup") // under the root, for --install-systemd-unit
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				conf := tt.setup(t, dir)
				if err := os.MkdirAll(filepath.Join(root, "etc/kubernetes"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "etc/hostname"), []byte("node\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				before := treeHash(t, root)
				var logs bytes.Buffer
				r := run(t, Options{
					Conf: conf, Root: root, DryRun: dryRun, Retries: -1, RetryBackoff: time.Millisecond,
					ConfigWait: time.Millisecond, ConfigPollInterval: time.Millisecond,
					InstallSystemdUnit: true, Executable: smallExecutable(t),
					Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				})
				var ce *ConfigError
				if !errors.As(r.runErr, &ce) {
					t.Fatalf("Run error = %v, want a *ConfigError", r.runErr)
				}
				for _, want := range tt.want {
					if !strings.Contains(r.runErr.Error(), want) {
						t.Errorf("error:\n%v\nwant it to contain %q", r.runErr, want)
					}
				}
				if strings.Contains(logs.String(), "retrying") {
					t.Errorf("a bad configuration was retried:\n%s", &logs)
				}
				if r.out != "" {
					t.Errorf("printed on stdout:\n%s", r.out)
				}
				if got := treeHash(t, root); got != before {
					t.Errorf("the tree changed:\nbefore:\n%s\nafter:\n%s", before, got)
				}
			})
		}
	}
}

// TestRetries: a run that failed for a reason that may pass (systemd not reachable yet at boot) is tried again,
// each retry logged, until the retries run out; a cancelled context stops the retries.
func TestRetries(t *testing.T) {
	conf := writeConf(t, t.TempDir(), "nodes", nodeConfig(t, "nodes"))
	// systemd is required, and its socket is not there yet.
	noSystemd := func(t *testing.T) nodetasks.NodeOptions {
		return nodetasks.NodeOptions{Systemd: nodetasks.SystemdRequired, SystemdSocket: filepath.Join(t.TempDir(), "private")}
	}

	t.Run("retries run out", func(t *testing.T) {
		var logs bytes.Buffer
		node := noSystemd(t)
		r := run(t, Options{Conf: conf, Root: t.TempDir(), Node: node, Retries: 2, RetryBackoff: time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if r.runErr == nil || !strings.Contains(r.runErr.Error(), node.SystemdSocket) {
			t.Errorf("Run error = %v, want one naming %s", r.runErr, node.SystemdSocket)
		}
		if n := strings.Count(logs.String(), `msg="nodeup failed; retrying"`); n != 2 {
			t.Errorf("logged %d retries, want 2:\n%s", n, &logs)
		}
	})

	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		logger := slog.New(slog.NewTextHandler(&fixOnRetry{w: &bytes.Buffer{}, fix: cancel}, nil))
		err := Run(ctx, Options{Conf: conf, Root: t.TempDir(), Node: noSystemd(t), Retries: -1, RetryBackoff: time.Hour, Logger: logger})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run error = %v, want it to wrap context.Canceled", err)
		}
	})
}

// TestPersonOnlyFailuresStopRetries: a run whose every failure is one its task marks terminal (what is on the
// node is in the way: a file where a directory belongs, a directory where a file belongs; a symbolic link out of
// the root) is not retried, whatever --retries says: the error names each failure and says why it is not retried.
// --retries 10 used to retry them for about 7 minutes at boot.
func TestPersonOnlyFailuresStopRetries(t *testing.T) {
	conf := writeConf(t, t.TempDir(), "nodes", nodeConfig(t, "nodes"))
	for _, tt := range []struct {
		name      string
		breakRoot func(t *testing.T, root string)
		want      []string
	}{
		{"a file where a directory belongs", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "etc/default"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"File//etc/default/kubelet: finding: resolving /etc/default/kubelet: /etc/default is not a directory"}},
		{"a directory where a file belongs", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "etc/default/kubelet/x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"/etc/default/kubelet is a directory, not a file"}},
		{"a link out of the root", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../../../../../../../tmp", filepath.Join(root, "etc/default")); err != nil {
				t.Fatal(err)
			}
		}, []string{"the symbolic link /etc/default -> ../../../../../../../../tmp escapes the node root"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.breakRoot(t, root)
			var logs bytes.Buffer
			r := run(t, Options{Conf: conf, Root: root, Retries: 10, RetryBackoff: time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			var runErr *engine.RunError
			if !errors.As(r.runErr, &runErr) {
				t.Fatalf("Run error = %v, want an *engine.RunError", r.runErr)
			}
			for _, want := range append(tt.want, "not retried (--retries 10): each of these failures is one its task marks terminal") {
				if !strings.Contains(r.runErr.Error(), want) {
					t.Errorf("error:\n%v\nwant it to contain %q", r.runErr, want)
				}
			}
			if strings.Contains(logs.String(), "retrying") {
				t.Errorf("retried:\n%s", &logs)
			}
		})
	}
}

// TestPersonOnly: a run is given up at once only when every failed task failed with an error its task marked
// terminal; an unclassified failure, one the engine gave up on (not ready, retryable) or a failure outside the
// graph is retried.
func TestPersonOnly(t *testing.T) {
	key := func(n string) engine.Key { return engine.Key{Type: "File", Name: n} }
	terminal := &engine.TaskError{Key: key("/a"), Err: engine.Terminal(errors.New("in the way"))}
	wrapped := &engine.TaskError{Key: key("/w"), Err: fmt.Errorf("writing: %w", engine.Terminal(errors.New("in the way")))}
	unclassified := &engine.TaskError{Key: key("/b"), Err: errors.New("input/output error")}
	gaveUp := &engine.TaskError{Key: key("/c"), Err: fmt.Errorf("gave up after 9 attempts: %w", engine.NotReady(errors.New("not yet")))}
	skipped := &engine.TaskError{Key: key("/d"), Err: errors.New("dependency File//a failed"), Skipped: true}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"all terminal", &engine.RunError{Failed: []*engine.TaskError{terminal, wrapped}, Skipped: []*engine.TaskError{skipped}}, true},
		{"one unclassified", &engine.RunError{Failed: []*engine.TaskError{terminal, unclassified}}, false},
		{"one given up on", &engine.RunError{Failed: []*engine.TaskError{terminal, gaveUp}}, false},
		{"only skipped", &engine.RunError{Skipped: []*engine.TaskError{skipped}}, false},
		{"outside the graph, terminal", engine.Terminal(errors.New("no systemd")), false},
		{"outside the graph", errors.New("connecting to systemd"), false},
	} {
		if got := personOnly(tt.err); got != tt.want {
			t.Errorf("%s: personOnly = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// fixOnRetry writes logs to w and calls fix once, when nodeup logs its first retry.
type fixOnRetry struct {
	w     *bytes.Buffer
	fix   func()
	fixed bool
}

func (f *fixOnRetry) Write(p []byte) (int, error) {
	if !f.fixed && bytes.Contains(p, []byte("retrying")) {
		f.fixed = true
		f.fix()
	}
	return f.w.Write(p)
}

// TestInstallSystemdUnit: nodeup installs itself and the unit that runs it at boot, with the same engine: a dry
// run shows it, an apply writes it, a second run has nothing to do.
func TestInstallSystemdUnit(t *testing.T) {
	root := t.TempDir()
	conf := writeConf(t, filepath.Join(root, "etc/kubeup"), "nodeup.conf", nodeConfig(t, "control-plane-a"))
	exe := smallExecutable(t)
	o := Options{Conf: conf, Root: root, Retries: 5, InstallSystemdUnit: true, Executable: exe}

	dry := o
	dry.DryRun = true
	before := treeHash(t, root)
	r := run(t, dry)
	if r.runErr != nil {
		t.Fatalf("dry run: %v", r.runErr)
	}
	for _, want := range []string{"  Executable//usr/local/bin/nodeup\n", "  SystemdService/kubeup-nodeup.service\n", "SystemdService/kubelet.service"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("dry run printed:\n%s\nwant it to contain %q", r.out, want)
		}
	}
	if got := treeHash(t, root); got != before {
		t.Fatalf("the dry run changed the tree")
	}

	if r := run(t, o); r.runErr != nil {
		t.Fatalf("apply: %v", r.runErr)
	}
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system", UnitName))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/kubeup-nodeup.service.golden", unit)
	bin := filepath.Join(root, InstalledBinary)
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 {
		t.Errorf("%s has mode %v, want 0755", InstalledBinary, st.Mode().Perm())
	}
	got, _ := os.ReadFile(bin)
	want, _ := os.ReadFile(exe)
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not a copy of the running nodeup", InstalledBinary)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system/multi-user.target.wants", UnitName)); err != nil {
		t.Errorf("the unit is not enabled: %v", err)
	}

	if r := run(t, dry); r.runErr != nil || r.out != "No changes need to be applied\n" {
		t.Errorf("dry run after apply: err %v, printed:\n%s", r.runErr, r.out)
	}

	// A new nodeup binary replaces the installed one.
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho nodeup v2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = run(t, o)
	if r.runErr != nil || r.out != "Applied 1 change(s):\n  modified Executable//usr/local/bin/nodeup: SHA256\n" {
		t.Errorf("apply of a new binary: err %v, printed:\n%s", r.runErr, r.out)
	}
}

func TestInstallSystemdUnitConfOutsideRoot(t *testing.T) {
	conf := writeConf(t, t.TempDir(), "nodes", nodeConfig(t, "nodes"))
	root := t.TempDir()
	r := run(t, Options{Conf: conf, Root: root, InstallSystemdUnit: true, Executable: smallExecutable(t)})
	var ce *ConfigError
	if !errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), "cannot see --conf "+conf) {
		t.Fatalf("Run error = %v, want a *ConfigError saying the node cannot see the configuration", r.runErr)
	}
	if got := treeHash(t, root); got != treeHash(t, t.TempDir()) {
		t.Errorf("the tree changed:\n%s", got)
	}
}

func TestSelfUnit(t *testing.T) {
	tests := []struct {
		conf    string
		retries int
		want    string
	}{
		{"/etc/kubeup/nodeup.conf", 0, "ExecStart=/usr/local/bin/nodeup --conf=/etc/kubeup/nodeup.conf\n"},
		{"s3://state/demo/nodeup/nodes", -1, "ExecStart=/usr/local/bin/nodeup --conf=s3://state/demo/nodeup/nodes --retries=-1\n"},
		{"/etc/kube up/100%$x\"", 2, `ExecStart=/usr/local/bin/nodeup "--conf=/etc/kube up/100%%$$x\"" --retries=2` + "\n"},
	}
	for _, tt := range tests {
		if got, err := selfUnitDefinition(tt.conf, tt.retries, ""); err != nil || !strings.Contains(got, tt.want) {
			t.Errorf("selfUnitDefinition(%q, %d): %v\n%s\nwant it to contain %q", tt.conf, tt.retries, err, got, tt.want)
		}
	}
	// The machine's --node-id is kept for its later boots (its record on the local provider is by id).
	want := "ExecStart=/usr/local/bin/nodeup --conf=/etc/kubeup/nodeup.conf --retries=3 --node-id=node2\n"
	if got, err := selfUnitDefinition("/etc/kubeup/nodeup.conf", 3, "node2"); err != nil || !strings.Contains(got, want) {
		t.Errorf("selfUnitDefinition with a node id: %v\n%s\nwant it to contain %q", err, got, want)
	}
}

// TestApplyChangesWhatTheDryRunAnnounced: the node graph with nodeup's own unit, through the engine's common
// check: the apply changes exactly what the dry run announced, and leaves no perpetual diff.
func TestApplyChangesWhatTheDryRunAnnounced(t *testing.T) {
	ctx := context.Background()
	nc, err := model.DecodeNodeConfigObject("conf", nodeConfig(t, "control-plane-a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	exe := smallExecutable(t)
	exeSum, err := fileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	n, err := nodetasks.NewNode(ctx, t.TempDir(), nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	enginetest.ApplyThenNoChanges(t, ctx, n, func() *engine.Graph[*nodetasks.Node] {
		g, err := nodegraph.BuildNodeGraph(nc)
		if err != nil {
			t.Fatal(err)
		}
		unit, err := selfUnitDefinition("/etc/kubeup/nodeup.conf", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		addSelfUnit(g, &selfInstall{executable: exe, sha256: exeSum, conf: "/etc/kubeup/nodeup.conf", unit: unit})
		return g
	})
}
