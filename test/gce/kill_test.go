package gce

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/test/internal/storecheck"
)

// killedUpdates is how many SIGKILLed updates TestKilledUpdatesLeaveAWholeStore makes in make test;
// KUBEUP_SOAK=1 makes soakKilledUpdates. (TestKilledUpdatesNeverDuplicate makes 20 more, without the store's
// checks.)
const (
	killedUpdates     = 8
	soakKilledUpdates = 60
)

// TestKilledUpdatesLeaveAWholeStore kills `kubeup update cluster --yes` with SIGKILL at random points (seeded,
// the seed logged), running it again each time. After each kill: no disk, template or group twice, and every
// object of the gs:// state store whole (no temporary object, every node configuration matching its sha256,
// specs and PEM decoding; the killed run's lock may stay, the next run takes it over). Then an update runs to
// its end: the project holds exactly the cluster's resources, a dry run has nothing to do, and the store holds no
// lock.
func TestKilledUpdatesLeaveAWholeStore(t *testing.T) {
	t.Parallel()
	// A little latency and slow operations, so that an update lasts long enough for the kills to land inside
	// it; new disks invisible for a while, so that a killed create is found again only by its request id.
	faults := fakegce.Faults{LatencyMillis: 5, SlowOperations: 1, DiskInvisibleCalls: 2}
	probe := newProject(t, false)
	probe.createCluster(cluster)
	if err := probe.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	probe.mustKubeup("update", "cluster", cluster, "--yes")
	whole := time.Since(start)

	runs := killedUpdates
	if os.Getenv("KUBEUP_SOAK") == "1" {
		runs = soakKilledUpdates
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KUBEUP_KILL_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("KUBEUP_KILL_SEED=%q: %v", s, err)
		}
	}
	t.Logf("an update takes %v; %d killed updates, seed %d (KUBEUP_KILL_SEED replays the delays)", whole.Round(time.Millisecond), runs, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	a := newProject(t, false)
	a.createCluster(cluster)
	if err := a.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		cmd := exec.Command(kubeupBinary, "update", "cluster", cluster, "--yes")
		cmd.Env = a.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(whole)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		t.Logf("run %d: killed after %v (%v)", i, delay.Round(time.Millisecond), err)
		a.settle(faults.DiskInvisibleCalls)
		a.checkNoDuplicates(fmt.Sprintf("after kill %d", i))
		for _, problem := range storecheck.Problems("gs://"+bucket+"/clusters/"+cluster, a.storeObjects(t, cluster), false) {
			t.Errorf("after kill %d (seed %d): %s", i, seed, problem)
		}
	}
	k := e2e.Kubeup{T: t, Bin: kubeupBinary, Env: a.env}
	k.Must("update", "cluster", cluster, "--yes")
	a.settle(faults.DiskInvisibleCalls)
	a.checkNoDuplicates("after the last update")
	if o := a.owned(cluster); len(o.Disks) != 6 || len(o.Templates) != 4 || len(o.Groups) != 6 {
		t.Errorf("after the last update: %+v, want 6 disks, 4 templates, 6 groups", o)
	}
	if out := k.Must("update", "cluster", cluster); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the dry run after:\n%s\nwant no changes", out)
	}
	a.checkStore(t, cluster)
}
