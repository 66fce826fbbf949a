package statestore

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/tasks/storetasks"
)

var _ storetasks.Store = Store(nil) // interface guard: what the store tasks need

const testBucket = "kubeup-state"

// backend is one kind of store under test. open returns a fresh, empty store; a test may call it more than once
// for two clients of the same store.
type backend struct {
	name string
	open func(t *testing.T) func() Store
}

var backends = []backend{
	{"file", func(t *testing.T) func() Store {
		dir := filepath.Join(t.TempDir(), "state")
		return func() Store { return mustOpen(t, dir) } // the bare-path form of a file:// URL
	}},
	{"s3", func(t *testing.T) func() Store {
		srv := newFakeS3(t, nil)
		setS3Env(t, srv.URL)
		return func() Store {
			st := mustOpen(t, "s3://"+testBucket+"/clusters")
			st.(*s3Store).pageSize = 2 // make List page
			return st
		}
	}},
	{"gs", func(t *testing.T) func() Store {
		srv := httptest.NewServer(fakegcs.New(testBucket))
		t.Cleanup(srv.Close)
		t.Setenv(EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
		return func() Store {
			st := mustOpen(t, "gs://"+testBucket+"/clusters")
			st.(*gsStore).pageSize = 2
			return st
		}
	}},
}

func mustOpen(t *testing.T, url string) Store {
	t.Helper()
	st, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	return st
}

// newFakeS3 starts gofakes3 with the test bucket, behind wrap if not nil.
func newFakeS3(t *testing.T, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	mem := s3mem.New()
	if err := mem.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(mem, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// setS3Env isolates the AWS SDK from the machine's configuration and points it at endpoint.
func setS3Env(t *testing.T, endpoint string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": endpoint, "AWS_MAX_ATTEMPTS": "1", EnvS3PathStyle: "",
	} {
		t.Setenv(k, v)
	}
}

// TestConformance runs the same contract against every backend.
func TestConformance(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Run("read absent", func(t *testing.T) {
				st := b.open(t)()
				if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) ||
					!strings.Contains(err.Error(), st.URL()+"/demo/config") {
					t.Errorf("ReadFile(absent) = %v, want fs.ErrNotExist naming %s/demo/config", err, st.URL())
				}
				if _, _, err := st.Read(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Read(absent) = %v, want fs.ErrNotExist", err)
				}
			})

			t.Run("write and read", func(t *testing.T) {
				st := b.open(t)()
				for _, data := range []string{"kind: Cluster\n", "", "\x00\xff binary", "kind: Cluster # v2\n"} {
					if err := st.WriteFile(ctx, "demo/config", []byte(data)); err != nil {
						t.Fatalf("WriteFile: %v", err)
					}
					got, err := st.ReadFile(ctx, "demo/config")
					if err != nil || string(got) != data {
						t.Fatalf("ReadFile = %q, %v; want %q", got, err, data)
					}
					got, gen, err := st.Read(ctx, "demo/config")
					if err != nil || string(got) != data || gen == Absent {
						t.Fatalf("Read = %q, %q, %v; want %q and a generation", got, gen, err, data)
					}
				}
			})

			t.Run("create once", func(t *testing.T) {
				st := b.open(t)()
				gen, err := st.WriteIf(ctx, "demo/config", []byte("first"), Absent)
				if err != nil {
					t.Fatalf("WriteIf(Absent) on an absent object: %v", err)
				}
				if _, got, err := st.Read(ctx, "demo/config"); err != nil || got != gen {
					t.Errorf("Read gives generation %q, %v; WriteIf returned %q", got, err, gen)
				}
				_, err = st.WriteIf(ctx, "demo/config", []byte("second"), Absent)
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), st.URL()+"/demo/config") {
					t.Errorf("second WriteIf(Absent) = %v, want ErrConflict naming the object", err)
				}
				if got, _ := st.ReadFile(ctx, "demo/config"); string(got) != "first" {
					t.Errorf("object holds %q, want %q", got, "first")
				}
			})

			t.Run("two operators", func(t *testing.T) {
				open := b.open(t)
				alice, bob := open(), open()
				if err := alice.WriteFile(ctx, "demo/config", []byte("v1")); err != nil {
					t.Fatal(err)
				}
				_, genA, errA := alice.Read(ctx, "demo/config")
				_, genB, errB := bob.Read(ctx, "demo/config")
				if errA != nil || errB != nil || genA != genB {
					t.Fatalf("reads: %q, %v and %q, %v; want the same generation", genA, errA, genB, errB)
				}
				newGen, err := alice.WriteIf(ctx, "demo/config", []byte("alice"), genA)
				if err != nil {
					t.Fatalf("first WriteIf: %v", err)
				}
				if newGen == genA {
					t.Errorf("generation %q did not change on write", newGen)
				}
				if _, err := bob.WriteIf(ctx, "demo/config", []byte("bob"), genB); !errors.Is(err, ErrConflict) {
					t.Errorf("second WriteIf = %v, want ErrConflict", err)
				}
				if got, _ := bob.ReadFile(ctx, "demo/config"); string(got) != "alice" {
					t.Errorf("object holds %q, want the first writer's %q", got, "alice")
				}
				// The winner can go on from the generation it got.
				if _, err := alice.WriteIf(ctx, "demo/config", []byte("alice 2"), newGen); err != nil {
					t.Errorf("WriteIf with the generation WriteIf returned: %v", err)
				}
			})

			t.Run("precondition on an absent object", func(t *testing.T) {
				st := b.open(t)()
				if err := st.WriteFile(ctx, "demo/config", []byte("v1")); err != nil {
					t.Fatal(err)
				}
				_, gen, err := st.Read(ctx, "demo/config")
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Delete(ctx, "demo/config"); err != nil {
					t.Fatal(err)
				}
				if _, err := st.WriteIf(ctx, "demo/config", []byte("v2"), gen); !errors.Is(err, ErrConflict) {
					t.Errorf("WriteIf(gen) of a deleted object = %v, want ErrConflict", err)
				}
				if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("after a refused WriteIf, ReadFile = %v, want fs.ErrNotExist", err)
				}
			})

			t.Run("list", func(t *testing.T) {
				st := b.open(t)()
				if got, err := st.List(ctx, ""); err != nil || len(got) != 0 {
					t.Errorf("List of an empty store = %q, %v", got, err)
				}
				all := []string{
					"demo/instancegroup/nodes", "demo/config", "demo2/config", "demo/nodeup/nodes.sha256",
					"demo/instancegroup/control-plane", "other/cluster-completed.spec", "demo/nodeup/nodes",
				}
				for _, p := range all {
					if err := st.WriteFile(ctx, p, []byte(p)); err != nil {
						t.Fatal(err)
					}
				}
				for _, tc := range []struct {
					prefix string
					want   []string
				}{
					{"", []string{
						"demo/config", "demo/instancegroup/control-plane", "demo/instancegroup/nodes", "demo/nodeup/nodes",
						"demo/nodeup/nodes.sha256", "demo2/config", "other/cluster-completed.spec",
					}},
					{"demo", []string{
						"demo/config", "demo/instancegroup/control-plane", "demo/instancegroup/nodes", "demo/nodeup/nodes",
						"demo/nodeup/nodes.sha256",
					}},
					{"demo/", []string{
						"demo/config", "demo/instancegroup/control-plane", "demo/instancegroup/nodes", "demo/nodeup/nodes",
						"demo/nodeup/nodes.sha256",
					}},
					{"demo/instancegroup", []string{"demo/instancegroup/control-plane", "demo/instancegroup/nodes"}},
					{"demo/config", nil}, // an object is not a directory
					{"dem", nil},
					{"absent", nil},
				} {
					got, err := st.List(ctx, tc.prefix)
					if err != nil {
						t.Errorf("List(%q): %v", tc.prefix, err)
						continue
					}
					if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("List(%q) (-want +got):\n%s", tc.prefix, diff)
					}
				}
			})

			t.Run("delete", func(t *testing.T) {
				st := b.open(t)()
				for _, p := range []string{"demo/config", "demo/instancegroup/nodes", "keep/config"} {
					if err := st.WriteFile(ctx, p, []byte("x")); err != nil {
						t.Fatal(err)
					}
				}
				for _, p := range []string{"demo/config", "demo/instancegroup/nodes", "demo/config", "never/was"} {
					if err := st.Delete(ctx, p); err != nil {
						t.Errorf("Delete(%q): %v", p, err)
					}
				}
				if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("after Delete, ReadFile = %v, want fs.ErrNotExist", err)
				}
				if got, err := st.List(ctx, ""); err != nil || !cmp.Equal(got, []string{"keep/config"}) {
					t.Errorf("after Delete, List = %q, %v; want [keep/config]", got, err)
				}
			})

			t.Run("bad paths", func(t *testing.T) {
				st := b.open(t)()
				for _, p := range []string{"", "/demo/config", "demo//config", "../demo", "demo/../x", "demo/./config",
					".lock", "demo/.config", "demo/", `demo\config`} {
					checks := map[string]error{}
					_, checks["ReadFile"] = st.ReadFile(ctx, p)
					_, _, checks["Read"] = st.Read(ctx, p)
					checks["WriteFile"] = st.WriteFile(ctx, p, []byte("x"))
					_, checks["WriteIf"] = st.WriteIf(ctx, p, []byte("x"), Absent)
					checks["Delete"] = st.Delete(ctx, p)
					for op, err := range checks {
						if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "path") {
							t.Errorf("%s(%q) = %v, want a path error", op, p, err)
						}
					}
				}
				for _, p := range []string{"/demo", "../demo", "demo//x", ".hidden"} {
					if _, err := st.List(ctx, p); err == nil {
						t.Errorf("List(%q) succeeded, want a path error", p)
					}
				}
				if got, err := st.List(ctx, ""); err != nil || len(got) != 0 {
					t.Errorf("bad paths wrote %q (%v)", got, err)
				}
			})
		})
	}
}

func TestOpen(t *testing.T) {
	setS3Env(t, "")
	t.Setenv(EnvStorageEmulatorHost, "127.0.0.1:1")
	for _, tc := range []struct {
		url, want, wantErr string
	}{
		{url: "/var/lib/kubeup", want: "file:///var/lib/kubeup"},
		{url: "/var/lib/kubeup/", want: "file:///var/lib/kubeup"},
		{url: "file:///var/lib/../lib/kubeup", want: "file:///var/lib/kubeup"},
		{url: "file://localhost/srv/state", want: "file:///srv/state"},
		{url: "file:///", wantErr: "the root directory / cannot be a state store (listing its clusters would walk the whole filesystem)"},
		{url: "/", wantErr: "cannot be a state store"},
		{url: "file://localhost/srv/..", wantErr: "cannot be a state store"},
		{url: "file:///srv/a b%20c#d", want: "file:///srv/a b%20c#d"}, // taken literally: URL() round-trips
		{url: "s3://bucket", want: "s3://bucket"},
		{url: "s3://bucket/", want: "s3://bucket"},
		{url: "s3://bucket/a/b/", want: "s3://bucket/a/b"},
		{url: "gs://bucket/kubeup", want: "gs://bucket/kubeup"},
		{url: "relative/dir", wantErr: "not a URL nor an absolute path"},
		{url: "file://host/srv", wantErr: "local directory"},
		{url: "file:relative", wantErr: "absolute path"},
		{url: "s3:///prefix", wantErr: "missing bucket"},
		{url: "gs://", wantErr: "missing bucket"},
		{url: "s3://bucket/a/../b", wantErr: `contains ".."`},
		{url: "s3://bucket/a//b", wantErr: "empty segment"},
		{url: "s3://bucket/a?region=x", wantErr: "query"},
		{url: "s3:bucket", wantErr: "missing bucket"},
		{url: "ftp://host/x", wantErr: `unsupported scheme "ftp"`},
		{url: "", wantErr: "not a URL"},
	} {
		st, err := Open(context.Background(), tc.url)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open(%q) = %v, want an error containing %q", tc.url, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("Open(%q): %v", tc.url, err)
		case st.URL() != tc.want:
			t.Errorf("Open(%q).URL() = %q, want %q", tc.url, st.URL(), tc.want)
		}
	}
}

func TestDefaultURL(t *testing.T) {
	t.Setenv(EnvStateStore, "s3://bucket/kubeup")
	if got, err := DefaultURL(); err != nil || got != "s3://bucket/kubeup" {
		t.Errorf("with %s set: DefaultURL() = %q, %v", EnvStateStore, got, err)
	}
	t.Setenv(EnvStateStore, "")
	t.Setenv("HOME", "/home/operator")
	if got, err := DefaultURL(); err != nil || got != "file:///home/operator/.kubeup/state" {
		t.Errorf("DefaultURL() = %q, %v; want file:///home/operator/.kubeup/state", got, err)
	}
}
