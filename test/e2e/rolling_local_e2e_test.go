//go:build e2e

package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestRollingUpdateLocal is the rolling update on the local provider: three control-plane machines
// (directories of this host) converged by nodeup, which records them, each kept by its protokube reading the
// machine's /etc/kubeup/node.conf as protokube.service does; protokube claims, formats and mounts the etcd
// volumes (loop devices) and publishes DNS in the zone file. A change of the spec (kubelet's maxPods) changes
// every control-plane group's node configuration; after `update --yes`, `rolling-update cluster` lists the
// three machines as NeedsUpdate with the sha256 they run and their group's; `--yes` converges them again with
// their nodeup, one at a time, with etcd's quorum checked (one log line per etcd cluster) before each; each
// machine's node.conf and kubelet flags are the new ones, and a second rolling update has nothing to do.
//
// The checks are the local machines' (--cloudonly: claims held by ready machines): no kube-apiserver runs here
// (test/e2e TestValidateCluster covers validate's API checks).
func TestRollingUpdateLocal(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "mkfs.ext4", "blkid", "mount", "umount")
	const name = "roll.example.com"
	bin := e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/nodeup", "kubeup.dev/kubeup/cmd/protokube")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(filepath.Join(bin, "kubeup"), append(args, "--state", "file://"+state)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("kubeup %s: %v (%s)", strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
		return stdout.String(), stderr.String(), err
	}
	kubeup := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(args...)
		if err != nil {
			t.Fatalf("kubeup %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	kubeup("create", "cluster", "--name", name, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0")
	kubeup("update", "cluster", name, "--yes")

	pool := state + "-local/volumes"
	images, err := filepath.Glob(filepath.Join(pool, "*.img"))
	if err != nil || len(images) != 6 {
		t.Fatalf("the pool holds %v (%v), want 6 volumes", images, err)
	}
	for _, img := range images {
		e2e.DetachLoopsOf(t, img) // runs after the unmounts registered below
	}
	type machine struct{ id, root string }
	var machines []machine
	nodeup := func(m machine, group string) {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, "nodeup"), "--conf="+filepath.Join(state, name, "nodeup", group),
			"--root="+m.root, "--node-id="+m.id).CombinedOutput()
		if err != nil {
			t.Fatalf("nodeup on %s: %v\n%s", m.id, err, out)
		}
	}
	for i := 1; i <= 3; i++ {
		m := machine{id: "node" + strconv.Itoa(i), root: filepath.Join(dir, "node"+strconv.Itoa(i))}
		e2e.SharedMounts(t, m.root) // volumes move between the roots: no other namespace's copy may hold one
		for _, img := range images {
			e2e.Unmount(t, filepath.Join(m.root, "mnt", "master-"+strings.TrimSuffix(filepath.Base(img), ".img")))
		}
		nodeup(m, "control-plane-a-"+strconv.Itoa(i))
		record := filepath.Join(state+"-local", "machines", name, m.id+".json")
		if b, err := os.ReadFile(record); err != nil || !strings.Contains(string(b), `"root": "`+m.root+`"`) {
			t.Fatalf("nodeup's record of %s: %v\n%s", m.id, err, b)
		}
		machines = append(machines, m)
	}
	var logs []string
	for i, m := range machines {
		// As protokube.service runs it: with the node.conf nodeup wrote. The lease outlasts a loaded machine's
		// slow round.
		cmd := exec.Command(filepath.Join(bin, "protokube"), "--conf="+filepath.Join(m.root, "etc/kubeup/node.conf"), "--root="+m.root,
			"--node-id="+m.id, "--internal-ip=192.0.2."+strconv.Itoa(i+1), "--interval=1s", "--lease=2m")
		log := filepath.Join(dir, m.id+"-protokube.log")
		e2e.StartProcess(t, cmd, log)
		logs = append(logs, log)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for k, l := range logs {
				t.Logf("%s protokube log:\n%s", machines[k].id, e2e.Tail(l, 20))
			}
		}
	})
	e2e.WaitFor(t, 2*time.Minute, "the 6 volumes to be claimed", func() ([]string, bool) {
		claims, _ := filepath.Glob(filepath.Join(pool, "*.claim"))
		return claims, len(claims) == 6
	})
	if out := kubeup("rolling-update", "cluster", name, "--cloudonly"); !strings.Contains(out, "No machine of cluster "+name+" needs to be replaced") {
		t.Fatalf("a rolling update of machines nodeup just converged has something to do:\n%s", out)
	}

	// Every control-plane group's node configuration changes.
	spec := kubeup("get", "cluster", name, "-o", "yaml")
	if !strings.HasSuffix(spec, "  zones:\n  - a\n") {
		t.Fatalf("the spec does not end with spec.zones, where the test adds spec.kubelet:\n%s", spec)
	}
	specFile := filepath.Join(dir, "spec.yaml")
	e2e.WriteFile(t, specFile, spec+"  kubelet:\n    maxPods: 80\n")
	kubeup("replace", "-f", specFile)
	kubeup("update", "cluster", name, "--yes")
	sums := map[string]string{} // group -> its configuration's sha256 (12 digits)
	for i := 1; i <= 3; i++ {
		group := "control-plane-a-" + strconv.Itoa(i)
		b, err := os.ReadFile(filepath.Join(state, name, "nodeup", group))
		if err != nil {
			t.Fatal(err)
		}
		sums[group] = strings.TrimPrefix(string(b[:len("# sha256:")+12]), "# sha256:")
	}

	out := kubeup("rolling-update", "cluster", name, "--cloudonly")
	t.Logf("rolling-update cluster:\n%s", out)
	for i, m := range machines {
		group := "control-plane-a-" + strconv.Itoa(i+1)
		line := regexp.MustCompile(`(?m)^` + m.id + ` +` + group + ` +a +NeedsUpdate +true +node configuration ([0-9a-f]{12}) \(converged by nodeup at [^)]+\), the group's is ([0-9a-f]{12})$`).FindStringSubmatch(out)
		if line == nil || line[2] != sums[group] || line[1] == line[2] {
			t.Errorf("%s is not listed as NeedsUpdate from another configuration to its group's %s: %q", m.id, sums[group], line)
		}
		if !regexp.MustCompile(`(?m)^` + group + ` +NeedsUpdate +1 +1 +1 +1 +1$`).MatchString(out) {
			t.Errorf("group %s is not listed as NeedsUpdate 1, ready 1, sizes 1", group)
		}
	}
	if !strings.Contains(out, "3 machines would be replaced") {
		t.Errorf("the dry run does not say 3 machines would be replaced")
	}

	stdout, stderr, err := run("rolling-update", "cluster", name, "--cloudonly", "--yes", "--interval", "200ms", "--validation-timeout", "2m")
	t.Logf("rolling-update --yes:\n%s\n%s", stdout, stderr)
	if err != nil {
		t.Fatalf("rolling-update --yes: %v", err)
	}
	// Before each machine, in order: the quorum check of both etcd clusters (passing), then the machine is
	// converged again, and it is done before the next one's check.
	var seen []string
	for _, l := range strings.Split(stderr, "\n") {
		inst := regexp.MustCompile(`instance=(\S+)`).FindStringSubmatch(l)
		switch {
		case strings.Contains(l, `msg="etcd quorum check"`):
			ec := regexp.MustCompile(`etcdCluster=(\S+)`).FindStringSubmatch(l)
			if inst == nil || ec == nil || !strings.Contains(l, "ok=true") {
				t.Errorf("quorum check line: %s", l)
				continue
			}
			seen = append(seen, "quorum "+inst[1]+" "+ec[1])
		case strings.Contains(l, `msg="the replacement is ready and the cluster healthy"`) && inst != nil:
			seen = append(seen, inst[1])
		}
	}
	want := []string{}
	for _, m := range machines {
		want = append(want, "quorum "+m.id+" main", "quorum "+m.id+" events", m.id)
	}
	if strings.Join(seen, "; ") != strings.Join(want, "; ") {
		t.Errorf("the rolling update did, in order:\n  %s\nwant:\n  %s", strings.Join(seen, "; "), strings.Join(want, "; "))
	}
	if !strings.Contains(stdout, "Rolling update of cluster "+name+" is done: 3 machines replaced") {
		t.Errorf("rolling-update --yes does not say it is done")
	}
	for i, m := range machines {
		group := "control-plane-a-" + strconv.Itoa(i+1)
		conf, err := os.ReadFile(filepath.Join(m.root, "etc/kubeup/node.conf"))
		if err != nil || !strings.HasPrefix(string(conf), "# sha256:"+sums[group]) {
			t.Errorf("%s's node.conf after the rolling update is not its group's %s: %.80q (%v)", m.id, sums[group], conf, err)
		}
		kubelet, err := os.ReadFile(filepath.Join(m.root, "etc/default/kubelet"))
		if err != nil || !strings.Contains(string(kubelet), "--max-pods=80") {
			t.Errorf("%s's kubelet flags after the rolling update: %v\n%s", m.id, err, kubelet)
		}
	}
	if out := kubeup("rolling-update", "cluster", name, "--cloudonly"); !strings.Contains(out, "No machine of cluster "+name+" needs to be replaced") {
		t.Errorf("a second rolling update has something to do:\n%s", out)
	}
	// --force converges an up-to-date machine again (a new incarnation: the wait does not take it for the old one).
	if stdout, stderr, err := run("rolling-update", "cluster", name, "--cloudonly", "--yes", "--force", "--instance-group", "control-plane-a-1",
		"--interval", "200ms", "--validation-timeout", "2m"); err != nil || !strings.Contains(stdout, "is done: 1 machine replaced.") {
		t.Errorf("rolling-update --yes --force --instance-group control-plane-a-1: %v\n%s\n%s", err, stdout, stderr)
	}
	// protokube ran the new configuration: its own dry run on a machine has nothing to change.
	dry, err := exec.Command(filepath.Join(bin, "protokube"), "--conf="+filepath.Join(machines[0].root, "etc/kubeup/node.conf"),
		"--root="+machines[0].root, "--node-id="+machines[0].id, "--internal-ip=192.0.2.1", "--lease=2m", "--once", "--dryrun").CombinedOutput()
	if err != nil || !strings.Contains(string(dry), "No changes need to be applied") {
		t.Errorf("protokube --once --dryrun on %s after the rolling update: %v\n%s", machines[0].id, err, dry)
	}
}
