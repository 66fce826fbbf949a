package gcetasks

import (
	"context"
	"kubeup.dev/kubeup/internal/gcelabels"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// intentDisk is zone a's etcd disk of the cluster graph.
const intentDisk = "a-etcd-main-gce-example-com"

// intentFixture applies the cluster graph (its etcd disks labelled as the model labels them, two instances in
// zone a) and returns the fake, and the names of zone a's instances.
func intentFixture(t *testing.T) (*Cloud, *fakegce.Server, []string) {
	t.Helper()
	c, srv := newTestCloud(t)
	s := defaultSpec()
	s.size = 2
	mustRun(t, c, engine.Apply, clusterGraph(s))
	var names []string
	err := c.Compute.Instances.List(testProject, zones[0]).Pages(context.Background(), func(l *compute.InstanceList) error {
		for _, i := range l.Items {
			names = append(names, i.Name)
		}
		return nil
	})
	if err != nil || len(names) != 2 {
		t.Fatalf("instances of zone a: %v, %v", names, err)
	}
	return c, srv, names
}

// diskLabels are disk name's labels as GCE holds them now.
func diskLabels(t *testing.T, c *Cloud, name string) map[string]string {
	t.Helper()
	d, err := c.Compute.Disks.Get(testProject, zones[0], name).Do()
	if err != nil {
		t.Fatal(err)
	}
	return d.Labels
}

// The intent's life on one disk, as two instances see it (the disk moves between them): none, then the intent
// of whoever began last, then none again; one setLabels per change and none when there is nothing to change;
// every other label kept.
func TestDisksFormatIntent(t *testing.T) {
	ctx := context.Background()
	c, srv, names := intentFixture(t)
	pa := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[0]}, DisksOptions{Root: t.TempDir()})
	pb := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[1]}, DisksOptions{Root: t.TempDir()})
	labels := diskLabels(t, c, intentDisk)
	if len(labels) < 3 {
		t.Fatalf("the etcd disk's labels: %v, want the cluster's and the member's", labels)
	}
	for _, s := range []struct {
		name      string
		do        func() error
		want      string // FormatIntent after the step, as either instance reads it
		setLabels int    // disks.setLabels calls of the step
	}{
		{name: "a disk without the label", do: func() error { return nil }},
		{name: "EndFormat of none", do: func() error { return pa.EndFormat(ctx, intentDisk) }},
		{name: "a begins", do: func() error { return pa.BeginFormat(ctx, intentDisk) }, want: names[0], setLabels: 1},
		{name: "a begins again", do: func() error { return pa.BeginFormat(ctx, intentDisk) }, want: names[0]},
		// a was interrupted; the disk moved to b, which formats it again.
		{name: "b begins", do: func() error { return pb.BeginFormat(ctx, intentDisk) }, want: names[1], setLabels: 1},
		{name: "a ends (whoever began)", do: func() error { return pa.EndFormat(ctx, intentDisk) }, setLabels: 1},
		{name: "b ends, none left", do: func() error { return pb.EndFormat(ctx, intentDisk) }},
	} {
		srv.ResetCalls()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if n := srv.Calls()["compute.disks.setLabels"]; n != s.setLabels {
			t.Errorf("%s: %d disks.setLabels, want %d", s.name, n, s.setLabels)
		}
		for _, p := range []*Disks{pa, pb} {
			srv.ResetCalls()
			got, err := p.FormatIntent(ctx, intentDisk)
			if err != nil || got != s.want {
				t.Errorf("%s: FormatIntent by %s = %q, %v, want %q", s.name, p.me.NodeID, got, err, s.want)
			}
			if diff := cmp.Diff(map[string]int{"compute.disks.get": 1}, srv.Calls()); diff != "" {
				t.Errorf("%s: FormatIntent's calls (-want +got):\n%s", s.name, diff)
			}
		}
		want := maps.Clone(labels)
		if s.want != "" {
			want[FormatIntentLabel] = s.want
		}
		if diff := cmp.Diff(want, diskLabels(t, c, intentDisk)); diff != "" {
			t.Errorf("%s: the disk's labels (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestIntentValue(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, c := range []struct{ node, want string }{
		{"cp-us-central1-a-gce-example-com-4bp8", "cp-us-central1-a-gce-example-com-4bp8"},
		{"Node.One", "node-one-" + gcelabels.Hash8("Node.One")},
		{"node-one", "node-one"},
		{long, strings.Repeat("x", 54) + "-" + gcelabels.Hash8(long)},
		{"", "-" + gcelabels.Hash8("")},
	} {
		got := intentValue(c.node)
		if got != c.want || !gcelabels.LabelValueRE.MatchString(got) {
			t.Errorf("intentValue(%q) = %q, want %q (a label value)", c.node, got, c.want)
		}
	}
}

// racer is a transport that, before each of the first n disks.setLabels it carries, changes the disk's labels
// through another client (label racer-<i>): the setLabels it then carries has a stale fingerprint.
type racer struct {
	t     *testing.T
	c     *Cloud
	n     int32
	count atomic.Int32
}

func (r *racer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/setLabels") {
		if i := r.count.Add(1); i <= r.n {
			d, err := r.c.Compute.Disks.Get(testProject, zones[0], intentDisk).Do()
			if err != nil {
				r.t.Error(err)
				return nil, err
			}
			labels := maps.Clone(d.Labels)
			labels["racer-"+string(rune('0'+i))] = "x"
			op, err := r.c.Compute.Disks.SetLabels(testProject, zones[0], intentDisk, &compute.ZoneSetLabelsRequest{Labels: labels, LabelFingerprint: d.LabelFingerprint}).Do()
			if err == nil {
				err = r.c.waitOperation(req.Context(), "racing", op)
			}
			if err != nil {
				r.t.Error(err)
				return nil, err
			}
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// Labels changed between the read and the write (412 conditionNotMet): read again and write again, keeping the
// other writer's labels; changed every time, the call is not ready (the engine tries again later) and has
// written nothing.
func TestDisksFormatIntentFingerprintConflict(t *testing.T) {
	ctx := context.Background()
	c, srv, names := intentFixture(t)
	for _, tc := range []struct {
		name      string
		begin     bool // BeginFormat, else EndFormat (of an intent present)
		conflicts int32
		notReady  bool // else success
	}{
		{name: "begin, one conflict", begin: true, conflicts: 1},
		{name: "end, two conflicts", conflicts: 2},
		{name: "begin, a conflict at every try", begin: true, conflicts: intentAttempts, notReady: true},
		{name: "end, a conflict at every try", conflicts: intentAttempts, notReady: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[0]}, DisksOptions{})
			if err := plain.EndFormat(ctx, intentDisk); err != nil {
				t.Fatal(err)
			}
			if !tc.begin {
				if err := plain.BeginFormat(ctx, intentDisk); err != nil {
					t.Fatal(err)
				}
			}
			before := diskLabels(t, c, intentDisk)
			r := &racer{t: t, c: c, n: tc.conflicts}
			svc, err := compute.NewService(ctx, option.WithEndpoint(c.Compute.BasePath), option.WithHTTPClient(&http.Client{Transport: r}))
			if err != nil {
				t.Fatal(err)
			}
			p := NewDisks(svc, testProject, zones[0], volumetasks.Holder{NodeID: names[0]}, DisksOptions{})
			do := p.EndFormat
			if tc.begin {
				do = p.BeginFormat
			}
			srv.ResetCalls()
			err = do(ctx, intentDisk)
			if !tc.notReady && err != nil || tc.notReady && engine.ClassOf(err) != engine.ClassNotReady {
				t.Fatalf("= %v, want not ready: %t", err, tc.notReady)
			}
			// Each try: the racer's setLabels and ours (refused but for the last try of a success).
			tries := min(tc.conflicts+1, intentAttempts)
			if n := srv.Calls()["compute.disks.setLabels"]; n != int(tries+tc.conflicts) {
				t.Errorf("%d disks.setLabels, want %d (%d tries, %d by the racer)", n, tries+tc.conflicts, tries, tc.conflicts)
			}
			want := maps.Clone(before)
			for i := range tc.conflicts {
				want["racer-"+string(rune('1'+i))] = "x"
			}
			switch {
			case tc.notReady:
			case tc.begin:
				want[FormatIntentLabel] = names[0]
			default:
				delete(want, FormatIntentLabel)
			}
			if diff := cmp.Diff(want, diskLabels(t, c, intentDisk)); diff != "" {
				t.Errorf("the disk's labels (-want +got):\n%s", diff)
			}
			// Clean up the racer's labels for the next case.
			d, err := c.Compute.Disks.Get(testProject, zones[0], intentDisk).Do()
			if err != nil {
				t.Fatal(err)
			}
			for k := range d.Labels {
				if strings.HasPrefix(k, "racer-") {
					delete(d.Labels, k)
				}
			}
			op, err := c.Compute.Disks.SetLabels(testProject, zones[0], intentDisk, &compute.ZoneSetLabelsRequest{Labels: d.Labels, LabelFingerprint: d.LabelFingerprint}).Do()
			if err == nil {
				err = c.waitOperation(ctx, "cleaning up", op)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Rate limits and server errors are retryable; the engine's tries then get through, slow operations waited on,
// and the intent is there, then gone; a disk that does not exist is terminal.
func TestDisksFormatIntentFaults(t *testing.T) {
	ctx := context.Background()
	c, srv, names := intentFixture(t)
	p := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[0]}, DisksOptions{})
	calls := map[string]func(string) error{
		"FormatIntent": func(id string) error { _, err := p.FormatIntent(ctx, id); return err },
		"BeginFormat":  func(id string) error { return p.BeginFormat(ctx, id) },
		"EndFormat":    func(id string) error { return p.EndFormat(ctx, id) },
	}
	for _, faults := range []fakegce.Faults{{RateLimitRate: 1}, {ServerErrorRate: 1}} {
		if err := srv.SetFaults(faults); err != nil {
			t.Fatal(err)
		}
		for _, name := range slices.Sorted(maps.Keys(calls)) {
			if err := calls[name](intentDisk); engine.ClassOf(err) != engine.ClassRetryable || !strings.Contains(err.Error(), intentDisk) {
				t.Errorf("%s with faults %+v = %v, want a retryable error naming %s", name, faults, err, intentDisk)
			}
		}
	}

	if err := srv.SetFaults(fakegce.Faults{RateLimitRate: 0.3, ServerErrorRate: 0.2, SlowOperations: 2, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	failed := 0
	// try calls f as the engine would: again while it is retryable, up to 30 times.
	try := func(what string, f func() error) {
		t.Helper()
		for range 30 {
			err := f()
			if err == nil {
				return
			}
			if engine.ClassOf(err) != engine.ClassRetryable {
				t.Fatalf("%s under faults: %v, want retryable", what, err)
			}
			failed++
		}
		t.Fatalf("%s under faults: 30 tries failed", what)
	}
	var got string
	try("BeginFormat", func() error { return p.BeginFormat(ctx, intentDisk) })
	try("FormatIntent", func() (err error) { got, err = p.FormatIntent(ctx, intentDisk); return err })
	if got != names[0] {
		t.Errorf("FormatIntent after BeginFormat under faults = %q, want %s", got, names[0])
	}
	try("EndFormat", func() error { return p.EndFormat(ctx, intentDisk) })
	try("FormatIntent", func() (err error) { got, err = p.FormatIntent(ctx, intentDisk); return err })
	if got != "" {
		t.Errorf("FormatIntent after EndFormat under faults = %q, want none", got)
	}
	if failed == 0 {
		t.Error("no call failed: the faults did not apply")
	}
	if err := srv.SetFaults(fakegce.Faults{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		if err := calls[name]("missing"); engine.ClassOf(err) != engine.ClassTerminal || !strings.Contains(err.Error(), "missing") {
			t.Errorf("%s of a disk that does not exist = %v, want a terminal error naming it", name, err)
		}
	}
}

// docs/gce.md's roles of the machines name the permission of every compute call protokube's disk provider makes.
func TestMachineRolesAllowWhatDisksCall(t *testing.T) {
	ctx := context.Background()
	c, srv, names := intentFixture(t)
	p := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[0]}, DisksOptions{Root: t.TempDir()})
	other := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[1]}, DisksOptions{Root: t.TempDir()})
	dev := p.devicePath(intentDisk)
	if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	for i, do := range []func() error{
		func() error {
			_, err := p.List(ctx, map[string]string{"kubernetes.io/cluster/" + testCluster: "owned"})
			return err
		},
		func() error { _, err := p.Attached(ctx, intentDisk); return err },
		func() error { _, err := p.Attach(ctx, intentDisk); return err },
		func() error { _, err := other.List(ctx, nil); return err }, // reads the holder
		func() error { _, err := p.FormatIntent(ctx, intentDisk); return err },
		func() error { return p.BeginFormat(ctx, intentDisk) },
		func() error { return p.EndFormat(ctx, intentDisk) },
		func() error { return p.Detach(ctx, intentDisk) },
	} {
		if err := do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// The permission each method needs, where it is not the method's own name.
	permissions := map[string][]string{
		"compute.disks.aggregatedList": {"compute.disks.list"},
		"compute.instances.attachDisk": {"compute.instances.attachDisk", "compute.disks.use"},
		"compute.zoneOperations.wait":  {"compute.zoneOperations.get"},
	}
	const doc = "../../docs/gce.md"
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## The roles the machines need")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatalf("%s: no section \"The roles the machines need\"", doc)
	}
	calls := srv.Calls()
	if calls["compute.disks.setLabels"] == 0 || calls["compute.instances.attachDisk"] == 0 {
		t.Fatalf("calls %v: want the intent's setLabels and an attachDisk", calls)
	}
	for method := range calls {
		need, ok := permissions[method]
		if !ok {
			need = []string{method}
		}
		for _, perm := range need {
			if !strings.Contains(section, "`"+perm+"`") {
				t.Errorf("%s: the machines' roles do not name `%s`, which protokube's disks need (%s)", doc, perm, method)
			}
		}
	}
}

// kubeup update neither shows nor removes the intent of a node formatting a disk: the Disk task leaves
// FormatIntentLabel alone (managedLabel), though it is of kubeup's prefix.
func TestDiskLeavesTheFormatIntent(t *testing.T) {
	ctx := context.Background()
	c, _, names := intentFixture(t)
	p := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[0]}, DisksOptions{})
	if err := p.BeginFormat(ctx, intentDisk); err != nil {
		t.Fatal(err)
	}
	s := defaultSpec()
	s.size = 2
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		c.NewRun()
		if plan := mustRun(t, c, target, clusterGraph(s)); !plan.Empty() {
			t.Errorf("%s with a format intent on a disk plans changes", target)
		}
		if got, err := p.FormatIntent(ctx, intentDisk); err != nil || got != names[0] {
			t.Errorf("after %s: FormatIntent = %q, %v, want the intent kept", target, got, err)
		}
	}
}
