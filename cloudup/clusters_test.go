package cloudup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/tasks/localtasks"
)

const demo = "demo.example.com"

func openStore(t *testing.T, url string) *Clusters {
	t.Helper()
	st, err := statestore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return &Clusters{Store: st}
}

func newDemo(t *testing.T, controlPlanes int) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{
		Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a", "b", "c"}, ControlPlaneCount: controlPlanes, NodeCount: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, igs
}

func TestCreateRefusesInvalidAndExisting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cs := openStore(t, "file://"+dir)

	c, igs := newDemo(t, 1)
	c.Spec.KubernetesVersion = "latest"
	err := cs.Create(ctx, "create", c, igs)
	var invalid *model.InvalidError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "spec.kubernetesVersion") {
		t.Fatalf("create of an invalid spec: %v", err)
	}
	if paths, _ := cs.Store.List(ctx, ""); len(paths) != 0 {
		t.Fatalf("an invalid create wrote %v", paths)
	}

	c, igs = newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, "create", c, igs); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v", err)
	}
	s, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + dir + "/" + demo; s.Cluster.Spec.ConfigBase != want {
		t.Errorf("configBase %q, want %q", s.Cluster.Spec.ConfigBase, want)
	}
	if len(s.InstanceGroups) != 2 {
		t.Errorf("%d instance groups, want 2", len(s.InstanceGroups))
	}
}

// TestConcurrentReplace is two operators changing the same cluster from the same read: the first wins, the
// second is refused and writes nothing.
func TestConcurrentReplace(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	alice := readForReplace(t, cs)
	bob := readForReplace(t, cs)

	alice.Cluster.Spec.KubernetesVersion = "1.34.3"
	if _, err := cs.Replace(ctx, "alice.yaml", &model.Objects{Cluster: alice.Cluster}, ReplaceOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := cs.Store.ReadFile(ctx, specPath(demo))

	bob.Cluster.Spec.KubernetesVersion = "1.34.4"
	bob.InstanceGroups[1].Spec.MaxSize = ptr[int32](5)
	_, err := cs.Replace(ctx, "bob.yaml", bob, ReplaceOptions{})
	if !errors.Is(err, statestore.ErrConflict) || !strings.Contains(err.Error(), "changed by someone else") {
		t.Fatalf("the second operator's replace: %v, want a conflict", err)
	}
	if after, _ := cs.Store.ReadFile(ctx, specPath(demo)); !bytes.Equal(before, after) {
		t.Errorf("the refused replace changed the spec:\n%s", after)
	}
}

// readForReplace reads the demo cluster as `kubeup get cluster -o yaml` and `kubeup get ig -o yaml` print it:
// each object carries the version it was read at.
func readForReplace(t *testing.T, cs *Clusters) *model.Objects {
	t.Helper()
	s, err := cs.Get(context.Background(), demo)
	if err != nil {
		t.Fatal(err)
	}
	data, err := model.Encode(objects(s.Cluster, s.InstanceGroups)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := model.Decode("read.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	objs.Cluster.Metadata.ResourceVersion = s.ClusterVersion()
	for _, ig := range objs.InstanceGroups {
		ig.Metadata.ResourceVersion = s.GroupVersion(ig.Metadata.Name)
	}
	return objs
}

// TestRefusedReplaceWritesNothing: alice changes only the nodes group; bob, who read the cluster before her,
// changes the cluster and the nodes group. Bob is refused, and none of his change is written: when the cluster
// and each group were objects of their own, his cluster object was written (its content, hence its generation,
// had not changed) before his group was refused.
func TestRefusedReplaceWritesNothing(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	alice := readForReplace(t, cs)
	bob := readForReplace(t, cs)
	alice.InstanceGroups[1].Spec.MaxSize = ptr[int32](3)
	if _, err := cs.Replace(ctx, "alice.yaml", &model.Objects{Cluster: alice.Cluster, InstanceGroups: alice.InstanceGroups[1:]}, ReplaceOptions{}); err != nil {
		t.Fatal(err)
	}
	bob.Cluster.Spec.KubernetesVersion = "1.34.3"
	bob.InstanceGroups[1].Spec.MaxSize = ptr[int32](7)
	if _, err := cs.Replace(ctx, "bob.yaml", &model.Objects{Cluster: bob.Cluster, InstanceGroups: bob.InstanceGroups[1:]}, ReplaceOptions{}); !errors.Is(err, statestore.ErrConflict) {
		t.Fatalf("bob's replace: %v, want a conflict", err)
	}
	got, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if v, max := got.Cluster.Spec.KubernetesVersion, *got.InstanceGroups[1].Spec.MaxSize; v == "1.34.3" || max != 3 {
		t.Errorf("after bob's refused replace: kubernetesVersion %q (bob's is 1.34.3), nodes maxSize %d (alice's is 3)", v, max)
	}
}

// TestConcurrentReplacesAreAllOrNothing races replaces of the cluster and its groups from one read, on every
// kind of store: the spec that is left is one writer's whole (cluster and groups from the same writer), and
// every writer whose replace was refused got a conflict.
func TestConcurrentReplacesAreAllOrNothing(t *testing.T) {
	for _, b := range testStores {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			cs := b.open(t)
			c, igs := newDemo(t, 1)
			// The local provider's pool and zone file, which only a file:// store has a default for, are never
			// used: nothing is applied.
			c.Spec.Local = &model.LocalSpec{PoolDir: "/nonexistent/pool", ZoneFile: "/nonexistent/example.com.zone"}
			if err := cs.Create(ctx, "create", c, igs); err != nil {
				t.Fatal(err)
			}
			const writers = 8
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, writers)
			for i := range writers {
				objs := readForReplace(t, cs)
				objs.Cluster.Spec.KubernetesVersion = fmt.Sprintf("1.34.%d", 10+i)
				for _, ig := range objs.InstanceGroups {
					ig.Spec.MaxSize = ptr(int32(10 + i))
				}
				wg.Go(func() {
					<-start
					_, errs[i] = cs.Replace(ctx, fmt.Sprintf("writer%d.yaml", i), objs, ReplaceOptions{})
				})
			}
			close(start)
			wg.Wait()
			won := 0
			for i, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, statestore.ErrConflict):
					t.Errorf("writer %d: %v, want success or a conflict", i, err)
				}
			}
			if won == 0 || (b.name != "s3" && won != 1) { // gofakes3 ignores conditional headers: see statestore
				t.Errorf("%d writers won, want 1", won)
			}
			got, err := cs.Get(ctx, demo)
			if err != nil {
				t.Fatal(err)
			}
			want := got.Cluster.Spec.KubernetesVersion
			for _, ig := range got.InstanceGroups {
				if v := fmt.Sprintf("1.34.%d", *ig.Spec.MaxSize); v != want {
					t.Errorf("a mix of writers: kubernetesVersion %s, instance group %s from the writer of %s", want, ig.Metadata.Name, v)
				}
			}
		})
	}
}

func TestEdit(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	// replaceIn is a user who makes one change and, shown an error on top of it, saves it again unchanged (gives
	// up): the editor is opened again after a refused save.
	replaceIn := func(old, new string) func(string) error {
		edited := false
		return func(path string) error {
			if edited {
				return nil
			}
			edited = true
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o600)
		}
	}

	changed, kept, err := cs.Edit(ctx, demo, func(string) error { return nil })
	if err != nil || changed || kept != "" {
		t.Errorf("an unchanged edit: changed %v, kept %q, err %v", changed, kept, err)
	}
	// A file that differs from the one shown but holds what is stored (a comment added) writes nothing, and
	// says so: the command printed "Updated" for it.
	stored, _ := cs.Store.ReadFile(ctx, model.ConfigPath(demo))
	changed, kept, err = cs.Edit(ctx, demo, replaceIn("zones:", "# a note of mine\n  zones:"))
	if err != nil || changed || kept != "" {
		t.Errorf("an edit that adds a comment: changed %v, kept %q, err %v; want nothing changed", changed, kept, err)
	}
	if now, _ := cs.Store.ReadFile(ctx, model.ConfigPath(demo)); !bytes.Equal(now, stored) {
		t.Error("an edit that adds a comment rewrote the spec")
	}

	before, _ := cs.Store.ReadFile(ctx, model.ConfigPath(demo))
	changed, kept, err = cs.Edit(ctx, demo, replaceIn("zones:", "kubernetesVersion: one.two\n  zones:"))
	if err == nil || changed || kept == "" || !strings.Contains(err.Error(), "spec.kubernetesVersion") {
		t.Fatalf("an invalid edit: changed %v, kept %q, err %v", changed, kept, err)
	}
	if b, err := os.ReadFile(kept); err != nil || !strings.Contains(string(b), "one.two") {
		t.Errorf("the kept edit %s: %v", kept, err)
	}
	os.Remove(kept)
	if after, _ := cs.Store.ReadFile(ctx, model.ConfigPath(demo)); !bytes.Equal(before, after) {
		t.Error("an invalid edit changed the store")
	}

	changed, kept, err = cs.Edit(ctx, demo, replaceIn("zones:", "kubernetesVersion: 1.34.3\n  zones:"))
	if err != nil || !changed || kept != "" {
		t.Fatalf("a valid edit: changed %v, kept %q, err %v", changed, kept, err)
	}
	s, _ := cs.Get(ctx, demo)
	if s.Cluster.Spec.KubernetesVersion != "1.34.3" {
		t.Errorf("after the edit: kubernetesVersion %q", s.Cluster.Spec.KubernetesVersion)
	}

	// Someone replaces the cluster while the editor is open: the edit is refused and kept, theirs stays.
	var shown []byte
	changed, kept, err = cs.Edit(ctx, demo, func(path string) error {
		shown, _ = os.ReadFile(path)
		objs := readForReplace(t, cs)
		objs.Cluster.Spec.KubernetesVersion = "1.34.4"
		if _, err := cs.Replace(ctx, "theirs.yaml", objs, ReplaceOptions{}); err != nil {
			return err
		}
		return replaceIn("1.34.3", "1.34.5")(path)
	})
	if !errors.Is(err, statestore.ErrConflict) || changed || kept == "" {
		t.Fatalf("an edit over a concurrent change: changed %v, kept %q, err %v", changed, kept, err)
	}
	os.Remove(kept)
	if s, _ := cs.Get(ctx, demo); s.Cluster.Spec.KubernetesVersion != "1.34.4" {
		t.Errorf("after the refused edit: kubernetesVersion %q, want theirs, 1.34.4", s.Cluster.Spec.KubernetesVersion)
	}
	if !strings.Contains(string(shown), "resourceVersion: "+s.ClusterVersion()) {
		t.Errorf("the editor was not shown the resourceVersion it edits:\n%s", shown)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(os.TempDir(), "kubeup-edit-*.yaml")); len(leftovers) > 0 {
		for _, l := range leftovers {
			if strings.Contains(l, filepath.Base(kept)) {
				t.Errorf("a successful edit left %s", l)
			}
		}
	}
}

// TestLifecycleOnS3 runs create, update, update --yes, update and delete with the state in S3 (gofakes3
// behind the real SDK) and the local provider's pool and zone file set explicitly.
func TestLifecycleOnS3(t *testing.T) {
	ctx := context.Background()
	cs := s3Clusters(t)
	local := t.TempDir()

	c, igs := newDemo(t, 3)
	if err := cs.Create(ctx, "create", c, igs); err == nil || !strings.Contains(err.Error(), "spec.local.poolDir") {
		t.Fatalf("create on s3 without a pool: %v, want spec.local.poolDir required", err)
	}
	c.Spec.Local = &model.LocalSpec{PoolDir: filepath.Join(local, "pool"), ZoneFile: filepath.Join(local, "example.com.zone")}
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	plan, err := cs.Update(ctx, demo, UpdateOptions{Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Changes) == 0 || !strings.Contains(out.String(), "Will create resources") {
		t.Fatalf("dry run:\n%s", &out)
	}
	if _, err := os.Stat(filepath.Join(local, "pool")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dry run made the pool: %v", err)
	}
	if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out, Apply: true}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if plan, err := cs.Update(ctx, demo, UpdateOptions{Out: &out}); err != nil || !plan.Empty() {
		t.Fatalf("after apply: %v\n%s", err, &out)
	}
	conf, err := cs.Store.ReadFile(ctx, model.NodeConfigPath(demo, "control-plane-a"))
	if err != nil {
		t.Fatal(err)
	}
	beside := func(name string) (string, []byte, error) {
		p := path.Join(path.Dir(model.NodeConfigPath(demo, "x")), name)
		data, err := cs.Store.ReadFile(ctx, p)
		return p, data, err
	}
	if _, err := model.DecodeNodeConfigObject("control-plane-a", conf, beside); err != nil {
		t.Errorf("the node configuration in the store: %v", err)
	}

	if err := cs.Delete(ctx, demo, DeleteOptions{Apply: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if left, _ := cs.Store.List(ctx, ""); len(left) != 0 {
		t.Errorf("left in the store: %v", left)
	}
	if entries, _ := os.ReadDir(local); len(entries) != 0 {
		t.Errorf("left beside it: %v", entries)
	}
}

// interfering is a store in which another operator replaces the cluster's "nodes" instance group (and only
// that: config is written back unchanged) the first time the update's dry run reads an object.
type interfering struct {
	statestore.Store
	interfere func()
	once      sync.Once
}

func (s *interfering) ReadFile(ctx context.Context, p string) ([]byte, error) {
	s.once.Do(s.interfere) // the dry run's tasks read concurrently: the others wait for it
	return s.Store.ReadFile(ctx, p)
}

func TestUpdateRefusesASpecChangedSinceItsDryRun(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	st := &interfering{Store: cs.Store, interfere: func() {
		other, err := cs.Get(ctx, demo)
		if err != nil {
			t.Error(err) // not Fatal: this runs in one of the engine's goroutines
			return
		}
		nodes := *other.InstanceGroups[1]
		nodes.Spec.MaxSize = ptr[int32](5)
		if _, err := cs.Replace(ctx, "other.yaml", &model.Objects{Cluster: other.Cluster, InstanceGroups: []*model.InstanceGroup{&nodes}}, ReplaceOptions{}); err != nil {
			t.Error(err)
		}
	}}
	var out bytes.Buffer
	_, err := (&Clusters{Store: st}).Update(ctx, demo, UpdateOptions{Out: &out, Apply: true})
	if err == nil || !strings.Contains(err.Error(), "changed by someone else while this update was planned (instance group nodes changed)") {
		t.Fatalf("update --yes over an instance group replaced after its dry run: %v, want it refused", err)
	}
	if _, err := cs.Store.ReadFile(ctx, model.CompletedSpecPath(demo)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused update wrote the complete spec: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestDeleteKeepsTheRecordsOfANestedCluster deletes prod.example.com beside eu.prod.example.com, in the same
// zone file: eu's API records are eu's, not prod's.
func TestDeleteKeepsTheRecordsOfANestedCluster(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	var out bytes.Buffer
	for _, name := range []string{"prod.example.com", "eu.prod.example.com"} {
		c, igs, err := model.NewCluster(model.NewClusterOptions{Name: name, CloudProvider: model.CloudLocal, Zones: []string{"a"}, DNSZone: "example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Create(ctx, "create", c, igs); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Update(ctx, name, UpdateOptions{Out: &out, Apply: true}); err != nil {
			t.Fatal(err)
		}
	}
	out.Reset()
	if err := cs.Delete(ctx, "prod.example.com", DeleteOptions{Apply: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "eu.prod") {
		t.Errorf("deleting prod.example.com touched eu.prod.example.com:\n%s", &out)
	}
	out.Reset()
	if plan, err := cs.Update(ctx, "eu.prod.example.com", UpdateOptions{Out: &out}); err != nil || !plan.Empty() {
		t.Errorf("eu.prod.example.com after prod.example.com was deleted: %v\n%s", err, &out)
	}
}

// TestDeleteOfAClusterNeverApplied deletes the spec of a cluster on a cloud this kubeup has no provider for (a
// spec a newer kubeup wrote): it never applied it, so the cluster owns nothing in the cloud this kubeup knows of,
// and its state must not be stuck in the store. One that was applied is refused rather than have its cloud
// resources forgotten.
func TestDeleteOfAClusterNeverApplied(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: "azure", Zones: []string{"westeurope-1"}})
	if err != nil {
		t.Fatal(err)
	}
	store := func() {
		t.Helper()
		c.Spec.ConfigBase = cs.configBase(demo)
		data, err := model.Encode(objects(c, igs)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Store.WriteFile(ctx, specPath(demo), data); err != nil {
			t.Fatal(err)
		}
	}
	store()
	var out bytes.Buffer
	if err := cs.Delete(ctx, demo, DeleteOptions{Out: &out}); err != nil || !strings.Contains(out.String(), "StoreFile/"+specPath(demo)) {
		t.Fatalf("delete dry run: %v\n%s", err, &out)
	}
	if err := cs.Delete(ctx, demo, DeleteOptions{Apply: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if left, _ := cs.Store.List(ctx, ""); len(left) != 0 {
		t.Errorf("left in the store: %v", left)
	}

	// Applied (by a kubeup that could): refused, nothing deleted.
	store()
	if err := cs.Store.WriteFile(ctx, model.CompletedSpecPath(demo), []byte("applied")); err != nil {
		t.Fatal(err)
	}
	if err := cs.Delete(ctx, demo, DeleteOptions{Apply: true, Out: &out}); err == nil || !strings.Contains(err.Error(), "this kubeup cannot delete azure resources") {
		t.Errorf("delete of an applied azure cluster: %v, want it refused", err)
	}
	if _, err := cs.Get(ctx, demo); err != nil {
		t.Errorf("the refused delete removed the cluster: %v", err)
	}
}

// TestCreateGCE: a gce cluster is created in a gs:// store, whose URL its machines read their configuration
// from; in any other store it is refused when it would be written, by create and by replace, and nothing is
// written.
func TestCreateGCE(t *testing.T) {
	ctx := context.Background()
	gce := func(t *testing.T) (*model.Cluster, []*model.InstanceGroup) {
		c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudGCE, Zones: []string{"europe-west1-b"},
			Project: "kubeup-demo", Network: "net", Subnetworks: []string{"subnet"},
			NodeupURL: "https://example.com/nodeup", NodeupSHA256: strings.Repeat("ab", 32)})
		if err != nil {
			t.Fatal(err)
		}
		return c, igs
	}
	t.Run("gs", func(t *testing.T) {
		cs := gsClusters(t)
		c, igs := gce(t)
		if err := cs.Create(ctx, "create", c, igs); err != nil {
			t.Fatal(err)
		}
		stored, err := cs.Get(ctx, demo)
		if err != nil {
			t.Fatal(err)
		}
		if got := stored.Cluster.Spec.ConfigBase; got != "gs://state/kubeup/"+demo {
			t.Errorf("configBase %s, want gs://state/kubeup/%s", got, demo)
		}
	})
	t.Run("file", func(t *testing.T) {
		cs := openStore(t, "file://"+t.TempDir())
		c, igs := gce(t)
		want := "create: spec.configBase: \"file://"
		if err := cs.Create(ctx, "create", c, igs); err == nil || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "a gce cluster's store must be gs://BUCKET") {
			t.Errorf("create: %v, want %q", err, want)
		}
		if left, _ := cs.Store.List(ctx, ""); len(left) != 0 {
			t.Errorf("the refused create wrote %v", left)
		}

		local, localIGs := newDemo(t, 1)
		if err := cs.Create(ctx, "create", local, localIGs); err != nil {
			t.Fatal(err)
		}
		before, _ := cs.Store.ReadFile(ctx, specPath(demo))
		objs := readForReplace(t, cs)
		objs.Cluster.Spec.CloudProvider = model.CloudGCE
		objs.Cluster.Spec.Zones = []string{"europe-west1-b"}
		objs.Cluster.Spec.Project = "kubeup-demo"
		objs.Cluster.Spec.Local = nil
		if _, err := cs.Replace(ctx, "x.yaml", objs, ReplaceOptions{}); err == nil || !strings.Contains(err.Error(), "spec.gce.network: required") {
			t.Errorf("replace with cloudProvider gce and no spec.gce: %v, want it refused", err)
		}
		if after, _ := cs.Store.ReadFile(ctx, specPath(demo)); !bytes.Equal(before, after) {
			t.Error("the refused replace changed the spec")
		}
	})
}

// TestUpdateExplainsAConflict: a task that found the cloud changed by someone else (localtasks.ErrConflict) is
// reported with what to do; other errors are left as they are.
func TestUpdateExplainsAConflict(t *testing.T) {
	conflict := fmt.Errorf("LocalVolume/a: %w", localtasks.ErrConflict)
	err := explainConflict(demo, conflict)
	if !errors.Is(err, localtasks.ErrConflict) || !strings.Contains(err.Error(), "changed by someone else while this update ran") ||
		!strings.Contains(err.Error(), "Run `kubeup update cluster demo.example.com` again") {
		t.Errorf("explainConflict: %v", err)
	}
	other := errors.New("disk full")
	if got := explainConflict(demo, other); got != other {
		t.Errorf("explainConflict changed another error: %v", got)
	}
}

// TestOlderLayout: a store an older kubeup wrote keeps the Cluster in <cluster>/config and each instance group
// in <cluster>/instancegroup/<name>. Such a cluster reads whole; its next change writes one object and removes
// the old ones.
func TestOlderLayout(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	c.Spec.ConfigBase = cs.configBase(demo)
	write := func(p string, obj any) {
		t.Helper()
		data, err := model.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Store.WriteFile(ctx, p, data); err != nil {
			t.Fatal(err)
		}
	}
	write(model.ConfigPath(demo), c)
	for _, ig := range igs {
		write(model.InstanceGroupPath(demo, ig.Metadata.Name), ig)
	}

	s, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.InstanceGroups) != len(igs) {
		t.Fatalf("read %d instance groups of the older layout, want %d", len(s.InstanceGroups), len(igs))
	}
	if _, _, err := cs.Complete(s); err != nil {
		t.Fatalf("the older layout's spec does not validate: %v", err)
	}

	changed := *s.Cluster
	changed.Spec.KubernetesVersion = "1.34.1"
	if _, err := cs.Replace(ctx, "f.yaml", &model.Objects{Cluster: &changed}, ReplaceOptions{}); err != nil {
		t.Fatal(err)
	}
	if paths, err := cs.Store.List(ctx, demo+"/instancegroup"); err != nil || len(paths) != 0 {
		t.Errorf("after a change, the older layout's objects are left: %v, %v", paths, err)
	}
	s, err = cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.InstanceGroups) != len(igs) || s.Cluster.Spec.KubernetesVersion != "1.34.1" {
		t.Errorf("after a change: %d instance groups, version %q", len(s.InstanceGroups), s.Cluster.Spec.KubernetesVersion)
	}
}

// TestDeleteRemovesTheLocalMachineRecords: delete --yes of a local cluster removes what nodeup recorded of its
// machines (for rolling-update), and the directories it leaves empty, down to the <store>-local directory; the
// records of another cluster stay.
func TestDeleteRemovesTheLocalMachineRecords(t *testing.T) {
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "state")
	cs := openStore(t, "file://"+store)
	var out bytes.Buffer
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudLocal, Zones: []string{"a"}, DNSZone: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Update(ctx, "demo.example.com", UpdateOptions{Out: &out, Apply: true}); err != nil {
		t.Fatal(err)
	}
	machines := filepath.Join(store+"-local", "machines")
	for _, f := range []string{"demo.example.com/node1.json", "demo.example.com/node2.json", "other.example.com/node9.json"} {
		if err := os.MkdirAll(filepath.Join(machines, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(machines, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.Delete(ctx, "demo.example.com", DeleteOptions{Apply: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(machines, "demo.example.com")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted cluster's machine records: %v, want them gone", err)
	}
	if _, err := os.Stat(filepath.Join(machines, "other.example.com", "node9.json")); err != nil {
		t.Errorf("another cluster's machine record: %v, want it kept", err)
	}
}

// TestListAClusterDirectory: a store URL that names a cluster's own directory (its configBase) is said to be one,
// with the store above it, instead of listing no clusters.
func TestListAClusterDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, igs := newDemo(t, 1)
	if err := openStore(t, "file://"+dir).Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	_, err := openStore(t, "file://"+dir+"/"+demo).List(ctx)
	if err == nil || !strings.Contains(err.Error(), "it is the directory of a cluster") || !strings.Contains(err.Error(), "--state file://"+dir) {
		t.Errorf("List of the cluster's directory: %v, want it named, with the store above it", err)
	}
	if names, err := openStore(t, "file://"+t.TempDir()).List(ctx); err != nil || len(names) != 0 {
		t.Errorf("List of an empty store: %v, %v", names, err)
	}
}

// TestIncompleteCluster: a cluster directory that holds objects (keys) but no spec, as an interrupted create or
// delete leaves it, was invisible to get and delete. It is listed, reading it says it is incomplete and what to
// do, delete deletes what is left, and replace gives it a spec.
func TestIncompleteCluster(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	const left = "left.example.com"
	keys := []string{model.KeypairPath(left, "ca"), model.KeypairPath(left, "etcd-peers-ca")}
	for _, k := range keys {
		if err := cs.Store.WriteFile(ctx, k, []byte("key")); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := cs.List(ctx); err != nil || !slices.Equal(names, []string{demo, left}) {
		t.Errorf("List = %v, %v; want %v", names, err, []string{demo, left})
	}
	_, err := cs.Get(ctx, left)
	var unreadable *UnreadableError
	if !errors.As(err, &unreadable) || !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "cluster left.example.com is incomplete") ||
		!strings.Contains(err.Error(), "kubeup delete cluster left.example.com --yes") || !strings.Contains(err.Error(), "holds 2 objects") {
		t.Errorf("Get of an incomplete cluster: %v", err)
	}
	if _, err := cs.Get(ctx, "none.example.com"); !errors.As(err, new(*NotFoundError)) {
		t.Errorf("Get of a cluster with nothing in the store: %v, want a *NotFoundError", err)
	}

	var out bytes.Buffer
	if err := cs.Delete(ctx, left, DeleteOptions{Out: &out}); err != nil || !strings.Contains(out.String(), "StoreFile/"+keys[0]) ||
		strings.Contains(out.String(), "StoreFile/"+specPath(left)) {
		t.Errorf("delete dry run of an incomplete cluster: %v\n%s", err, &out)
	}
	if err := cs.Delete(ctx, left, DeleteOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("delete of an incomplete cluster: %v\n%s", err, &out)
	}
	if names, err := cs.List(ctx); err != nil || !slices.Equal(names, []string{demo}) {
		t.Errorf("after the delete, List = %v, %v; want %v", names, err, []string{demo})
	}

	// Given a spec by replace, whole.
	if err := cs.Store.WriteFile(ctx, keys[0], []byte("key")); err != nil {
		t.Fatal(err)
	}
	c2, igs2, err := model.NewCluster(model.NewClusterOptions{Name: left, CloudProvider: model.CloudLocal, Zones: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Replace(ctx, "left.yaml", &model.Objects{Cluster: c2, InstanceGroups: igs2}, ReplaceOptions{}); err != nil {
		t.Fatalf("replace of an incomplete cluster: %v", err)
	}
	if _, err := cs.Get(ctx, left); err != nil {
		t.Errorf("after replace: %v", err)
	}
}
