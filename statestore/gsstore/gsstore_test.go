package gsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/statestore/storetest"
)

const testBucket = "kubeup-state"

// TestConformance runs the store contract against the gs:// store, on fakegcs.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() statestore.Store {
		srv := httptest.NewServer(fakegcs.New(testBucket))
		t.Cleanup(srv.Close)
		t.Setenv(EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
		return func() statestore.Store {
			st := storetest.MustOpen(t, "gs://"+testBucket+"/clusters")
			st.(*store).pageSize = 2 // make List page
			return st
		}
	})
}

func TestCheckMissingBucket(t *testing.T) {
	srv := httptest.NewServer(fakegcs.New(testBucket))
	t.Cleanup(srv.Close)
	t.Setenv(EnvStorageEmulatorHost, srv.URL)
	err := storetest.MustOpen(t, "gs://no-such-bucket").Check(context.Background())
	if !errors.Is(err, statestore.ErrNoStore) || !strings.Contains(err.Error(), "state store gs://no-such-bucket: the state store does not exist: no such bucket no-such-bucket") {
		t.Errorf("Check = %v, want ErrNoStore naming the bucket", err)
	}
}

func TestGSEmulatorHost(t *testing.T) {
	fake := fakegcs.New(testBucket)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	for _, host := range []string{strings.TrimPrefix(srv.URL, "http://"), srv.URL, srv.URL + "/"} {
		t.Setenv(EnvStorageEmulatorHost, host)
		st := storetest.MustOpen(t, "gs://"+testBucket+"/kubeup")
		if err := st.WriteFile(context.Background(), "demo/config", []byte(host)); err != nil {
			t.Errorf("%s=%s: %v", EnvStorageEmulatorHost, host, err)
			continue
		}
		if data, _, _ := fake.Object(testBucket, "kubeup/demo/config"); string(data) != host {
			t.Errorf("%s=%s: the fake holds %q", EnvStorageEmulatorHost, host, data)
		}
	}
}

func TestGSListPages(t *testing.T) {
	var lists atomic.Int32
	fake := fakegcs.New(testBucket)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/storage/v1/b/"+testBucket+"/o" {
			lists.Add(1)
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv(EnvStorageEmulatorHost, srv.URL)
	st := storetest.MustOpen(t, "gs://"+testBucket).(*store)
	st.pageSize = 2
	var want []string
	for i := range 5 {
		p := fmt.Sprintf("demo/instancegroup/ig%d", i)
		want = append(want, p)
		if err := st.WriteFile(context.Background(), p, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.List(context.Background(), "demo")
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("List = %q, %v; want %q", got, err, want)
	}
	if n := lists.Load(); n != 3 {
		t.Errorf("%d objects.list requests, want 3 pages of at most 2", n)
	}
}

func TestGSErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		check  func(error) bool
		want   string
	}{
		{401, func(err error) bool { return errors.Is(err, engine.ErrAccessDenied) }, "engine.ErrAccessDenied"},
		{403, func(err error) bool { return errors.Is(err, engine.ErrAccessDenied) }, "engine.ErrAccessDenied"},
		{429, func(err error) bool { return engine.ClassOf(err) == engine.ClassRetryable }, "retryable"},
		{503, func(err error) bool { return engine.ClassOf(err) == engine.ClassRetryable }, "retryable"},
		{404, func(err error) bool { return errors.Is(err, fs.ErrNotExist) }, "fs.ErrNotExist"},
		{400, func(err error) bool {
			return engine.ClassOf(err) == engine.ClassTerminal && !errors.Is(err, fs.ErrNotExist)
		}, "terminal"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, `{"error":{"code":%d,"message":"test"}}`, tc.status)
			}))
			defer srv.Close()
			t.Setenv(EnvStorageEmulatorHost, srv.URL)
			st := storetest.MustOpen(t, "gs://"+testBucket+"/kubeup")
			_, err := st.ReadFile(context.Background(), "demo/config")
			if err == nil || !tc.check(err) || !strings.Contains(err.Error(), "reading gs://kubeup-state/kubeup/demo/config: ") {
				t.Errorf("ReadFile = %v, want %s naming the object", err, tc.want)
			}
		})
	}
}

func TestGSBadGeneration(t *testing.T) {
	srv := httptest.NewServer(fakegcs.New(testBucket))
	defer srv.Close()
	t.Setenv(EnvStorageEmulatorHost, srv.URL)
	st := storetest.MustOpen(t, "gs://"+testBucket)
	for _, gen := range []statestore.Generation{"abc", "-1", "0", `"etag"`} {
		if _, err := st.WriteIf(context.Background(), "demo/config", nil, gen); err == nil || !strings.Contains(err.Error(), "not a generation") {
			t.Errorf("WriteIf(%q) = %v, want an error about the generation", gen, err)
		}
	}
}

// TestGSCredentialsRecover: without a credentials file, the gs:// store takes the machine's service account from
// the metadata server. While the server does not answer (a blip at boot), Open fails with an engine.Retryable
// error that says so; once it answers, Open works. The client libraries decided "not on GCE" once per process,
// so that a store opened again in the same process never found credentials.
func TestGSCredentialsRecover(t *testing.T) {
	var up atomic.Bool
	md := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Metadata-Flavor", "Google")
		if !up.Load() {
			http.Error(w, "not yet", http.StatusNotFound)
			return
		}
		if r.URL.Path != "/computeMetadata/v1/project/project-id" || r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "unexpected "+r.URL.Path, http.StatusBadRequest)
			return
		}
		w.Write([]byte("demo-project"))
	}))
	defer md.Close()
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	t.Setenv(EnvStorageEmulatorHost, "")

	_, err := statestore.Open(context.Background(), "gs://"+testBucket+"/kubeup")
	if err == nil || engine.ClassOf(err) != engine.ClassRetryable || !strings.Contains(err.Error(), "the metadata server does not answer") {
		t.Fatalf("Open while the metadata server does not answer = %v, want a retryable error saying so", err)
	}
	up.Store(true)
	if _, err := statestore.Open(context.Background(), "gs://"+testBucket+"/kubeup"); err != nil {
		t.Fatalf("Open once the metadata server answers: %v", err)
	}
}
