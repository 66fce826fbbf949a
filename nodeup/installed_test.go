package nodeup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// filesOf is treeHash without the directories: the files and symbolic links under root, each with its mode and
// contents or target.
func filesOf(t *testing.T, root string) string {
	t.Helper()
	var kept []string
	for _, l := range strings.Split(treeHash(t, root), "\n") {
		if _, mode, _ := strings.Cut(l, " "); !strings.HasPrefix(mode, "d") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// TestRoleChangeRemovesWhatItNoLongerWants converges a root with a control plane's configuration, then with a
// worker's: the dry run lists what the control plane had and the worker does not want (the control plane's
// manifests and keys; a local cluster's worker keeps node.conf and protokube.service, for its pod routes) under "Will delete resources" and changes nothing; the apply
// leaves exactly the files a worker converged from scratch has, and every file nodeup did not install where it
// was; the next dry run and apply have nothing to do.
func TestRoleChangeRemovesWhatItNoLongerWants(t *testing.T) {
	dir := t.TempDir()
	encode := func(group string) string {
		obj, err := completeNodeConfig(t, group, nil).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return writeConf(t, dir, group, obj)
	}
	cp, worker := encode("control-plane-a"), encode("nodes")
	root := t.TempDir()
	if r := run(t, Options{Conf: cp, Root: root}); r.runErr != nil {
		t.Fatalf("control plane apply: %v", r.runErr)
	}
	// What nodeup did not install, in its directories and out of them: protokube's etcd manifest, a file of the
	// operator's, a system file.
	others := map[string]string{
		"etc/kubernetes/manifests/etcd-main.manifest": "apiVersion: v1\nkind: Pod\n",
		"srv/kubernetes/operator.key":                 "mine\n",
		"etc/passwd":                                  "root:x:0:0::/root:/bin/sh\n",
	}
	for p, data := range others {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"srv/kubernetes/server.key", "etc/systemd/system/multi-user.target.wants/protokube.service"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Fatalf("the control plane has no %s: %v", p, err)
		}
	}

	before := treeHash(t, root)
	r := run(t, Options{Conf: worker, Root: root, DryRun: true})
	if r.runErr != nil {
		t.Fatalf("worker dry run: %v", r.runErr)
	}
	for _, want := range []string{
		"Will delete resources (installed by nodeup, no longer wanted):\n",
		"  Absent//etc/kubernetes/manifests/kube-apiserver.manifest (exists)\n",
		"  Absent//etc/kubernetes/manifests/kube-controller-manager.manifest (exists)\n",
		"  Absent//etc/kubernetes/manifests/kube-scheduler.manifest (exists)\n",
		"  Absent//srv/kubernetes/server.key (exists)\n",
		"  Absent//srv/kubernetes/service-account.key (exists)\n",
		"  Absent//srv/kubernetes/kube-apiserver/etcd-client.key (exists)\n",
		"Run nodeup without --dryrun to apply these changes\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the worker's dry run printed:\n%s\nwant it to contain %q", r.out, want)
		}
	}
	for _, not := range []string{"etcd-main.manifest", "operator.key", "passwd", "kube-proxy.manifest (", "Absent//srv/kubernetes/ca.crt",
		"Absent//etc/kubeup/node.conf", "AbsentService/protokube.service"} {
		if strings.Contains(r.out, not) {
			t.Errorf("the worker's dry run printed:\n%s\nwant nothing of %s", r.out, not)
		}
	}
	if got := treeHash(t, root); got != before {
		t.Fatal("the dry run changed the root")
	}

	r = run(t, Options{Conf: worker, Root: root})
	if r.runErr != nil {
		t.Fatalf("worker apply: %v\n%s", r.runErr, r.out)
	}
	for _, want := range []string{"  deleted  Absent//srv/kubernetes/server.key\n", "  deleted  Absent//etc/kubernetes/manifests/kube-apiserver.manifest\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the worker's apply printed:\n%s\nwant it to contain %q", r.out, want)
		}
	}
	for p, data := range others {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != data {
			t.Errorf("%s, which nodeup did not install, is now %q (%v)", p, b, err)
		}
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	fresh := t.TempDir()
	if r := run(t, Options{Conf: worker, Root: fresh}); r.runErr != nil {
		t.Fatalf("worker apply on an empty root: %v", r.runErr)
	}
	if got, want := filesOf(t, root), filesOf(t, fresh); got != want {
		t.Errorf("after the role change the root holds:\n%s\nwant what a worker converged from scratch holds:\n%s", got, want)
	}
	for p, data := range others { // back, for the runs below
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	applied := treeHash(t, root)
	if r := run(t, Options{Conf: worker, Root: root, DryRun: true}); r.runErr != nil || r.out != "No changes need to be applied\n" {
		t.Errorf("dry run after the apply: %v, printed:\n%s\nwant: No changes need to be applied", r.runErr, r.out)
	}
	if r := run(t, Options{Conf: worker, Root: root}); r.runErr != nil || r.out != "No changes were needed\n" {
		t.Errorf("second apply: %v, printed:\n%s\nwant: No changes were needed", r.runErr, r.out)
	}
	if got := treeHash(t, root); got != applied {
		t.Errorf("the second apply changed the root:\nbefore:\n%s\nafter:\n%s", applied, got)
	}
}

// TestRecordNeverRemovesWhatKubeupDoesNotOwn: a record edited to list system files and another service makes
// nodeup remove none of them.
func TestRecordNeverRemovesWhatKubeupDoesNotOwn(t *testing.T) {
	root := t.TempDir()
	conf := writeConf(t, t.TempDir(), "nodes", nodeConfig(t, "nodes"))
	if r := run(t, Options{Conf: conf, Root: root}); r.runErr != nil {
		t.Fatal(r.runErr)
	}
	rec := filepath.Join(root, installedRecord)
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"etc/shadow", "etc/systemd/system/ssh.service"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte("keep\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	edited := string(b) + "file /etc/shadow\nfile /etc/kubernetes/../shadow\nunit ssh.service\nfile relative\n"
	if err := os.WriteFile(rec, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, Options{Conf: conf, Root: root})
	if r.runErr != nil {
		t.Fatal(r.runErr)
	}
	if r.out != "Applied 1 change(s):\n  modified File//var/lib/kubeup/nodeup/installed: Contents\n" {
		t.Errorf("apply printed:\n%s\nwant the record rewritten, nothing removed", r.out)
	}
	for _, p := range []string{"etc/shadow", "etc/systemd/system/ssh.service"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
