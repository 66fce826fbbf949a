package cloudup

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"kubeup.dev/kubeup/cloudup/statestore"
	"kubeup.dev/kubeup/model"
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
	alice, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}

	aliceSpec := *alice.Cluster
	aliceSpec.Spec.KubernetesVersion = "1.34.3"
	if err := cs.Replace(ctx, "alice.yaml", alice, &aliceSpec, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := cs.Store.List(ctx, "")

	bobSpec := *bob.Cluster
	bobSpec.Spec.KubernetesVersion = "1.34.4"
	nodes := *bob.InstanceGroups[1]
	size := int32(5)
	nodes.Spec.MaxSize = &size
	err = cs.Replace(ctx, "bob.yaml", bob, &bobSpec, []*model.InstanceGroup{&nodes})
	if !errors.Is(err, statestore.ErrConflict) || !strings.Contains(err.Error(), "changed by someone else") {
		t.Fatalf("the second operator's replace: %v, want a conflict", err)
	}
	got, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cluster.Spec.KubernetesVersion != "1.34.3" || *got.InstanceGroups[1].Spec.MaxSize != 1 {
		t.Errorf("after the refused replace: version %s, nodes maxSize %d", got.Cluster.Spec.KubernetesVersion, *got.InstanceGroups[1].Spec.MaxSize)
	}
	if after, _ := cs.Store.List(ctx, ""); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("objects changed: %v -> %v", before, after)
	}
}

func TestEdit(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	replaceIn := func(old, new string) func(string) error {
		return func(path string) error {
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
	mem := s3mem.New()
	if err := mem.CreateBucket("state"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(mem, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL_S3": srv.URL,
	} {
		t.Setenv(k, v)
	}
	cs := openStore(t, "s3://state/kubeup")
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
	sum, err := cs.Store.ReadFile(ctx, model.NodeConfigPath(demo, "control-plane-a")+".sha256")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.DecodeNodeConfig("control-plane-a", conf, string(sum)); err != nil {
		t.Errorf("the node configuration in the store: %v", err)
	}

	if err := cs.Delete(ctx, demo, true, &out); err != nil {
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
		if err := cs.Replace(ctx, "other.yaml", other, other.Cluster, []*model.InstanceGroup{&nodes}); err != nil {
			t.Error(err)
		}
	}}
	var out bytes.Buffer
	_, err := (&Clusters{Store: st}).Update(ctx, demo, UpdateOptions{Out: &out, Apply: true})
	if err == nil || !strings.Contains(err.Error(), "changed by someone else while this update was planned") {
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
	if err := cs.Delete(ctx, "prod.example.com", true, &out); err != nil {
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

// TestDeleteOfAClusterNeverApplied deletes an aws cluster's spec: kubeup cannot update aws clusters yet, so it
// owns nothing in the cloud, and its state must not be stuck in the store.
func TestDeleteOfAClusterNeverApplied(t *testing.T) {
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudAWS, Zones: []string{"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cs.Delete(ctx, demo, false, &out); err != nil || !strings.Contains(out.String(), "StoreFile/"+model.ConfigPath(demo)) {
		t.Fatalf("delete dry run: %v\n%s", err, &out)
	}
	if err := cs.Delete(ctx, demo, true, &out); err != nil {
		t.Fatal(err)
	}
	if left, _ := cs.Store.List(ctx, ""); len(left) != 0 {
		t.Errorf("left in the store: %v", left)
	}

	// Applied (by a kubeup that could): refused, nothing deleted.
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	if err := cs.Store.WriteFile(ctx, model.CompletedSpecPath(demo), []byte("applied")); err != nil {
		t.Fatal(err)
	}
	if err := cs.Delete(ctx, demo, true, &out); err == nil || !strings.Contains(err.Error(), "cannot delete aws resources yet") {
		t.Errorf("delete of an applied aws cluster: %v, want it refused", err)
	}
	if _, err := cs.Get(ctx, demo); err != nil {
		t.Errorf("the refused delete removed the cluster: %v", err)
	}
}
