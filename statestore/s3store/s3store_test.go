package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/statestore/storetest"
)

const testBucket = "kubeup-state"

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

// TestConformance runs the store contract against the s3:// store, on gofakes3.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() statestore.Store {
		srv := newFakeS3(t, nil)
		setS3Env(t, srv.URL)
		return func() statestore.Store {
			st := storetest.MustOpen(t, "s3://"+testBucket+"/clusters")
			st.(*store).pageSize = 2 // make List page
			return st
		}
	})
}

// TestOpen: statestore.Open hands s3:// URLs to this package once it is linked.
func TestOpen(t *testing.T) {
	setS3Env(t, "")
	for url, want := range map[string]string{"s3://bucket": "s3://bucket", "s3://bucket/a/b/": "s3://bucket/a/b"} {
		st := storetest.MustOpen(t, url)
		if _, ok := st.(*store); !ok || st.URL() != want {
			t.Errorf("Open(%q) = %T with URL %q, want this package's store with URL %q", url, st, st.URL(), want)
		}
	}
}

func TestCheckMissingBucket(t *testing.T) {
	srv := newFakeS3(t, nil)
	setS3Env(t, srv.URL)
	err := storetest.MustOpen(t, "s3://no-such-bucket/clusters").Check(context.Background())
	if !errors.Is(err, statestore.ErrNoStore) || !strings.Contains(err.Error(), "state store s3://no-such-bucket/clusters: the state store does not exist: no such bucket no-such-bucket") {
		t.Errorf("Check = %v, want ErrNoStore naming the bucket", err)
	}
}

func openS3(t *testing.T) *store {
	t.Helper()
	return storetest.MustOpen(t, "s3://"+testBucket+"/clusters").(*store)
}

func TestS3ClientOptions(t *testing.T) {
	for _, tc := range []struct {
		name               string
		env                map[string]string
		wantRegion         string
		wantPathStyle      bool
		wantEndpointPrefix string
	}{
		{name: "defaults", wantRegion: "us-east-1"},
		{name: "region from the environment", env: map[string]string{"AWS_REGION": "eu-west-3"}, wantRegion: "eu-west-3"},
		{name: "endpoint override", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"},
			wantRegion: "us-east-1", wantPathStyle: true},
		{name: "global endpoint override", env: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"},
			wantRegion: "us-east-1", wantPathStyle: true},
		{name: "path style asked for", env: map[string]string{EnvS3PathStyle: "1"}, wantRegion: "us-east-1", wantPathStyle: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setS3Env(t, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			opts := openS3(t).client.Options()
			if opts.Region != tc.wantRegion || opts.UsePathStyle != tc.wantPathStyle {
				t.Errorf("region %q, path style %v; want %q, %v", opts.Region, opts.UsePathStyle, tc.wantRegion, tc.wantPathStyle)
			}
			// The SDK must not close a body under the transport (awssdk.OwnBodies): the store applies it itself.
			if got := fmt.Sprintf("%T", opts.HTTPClient); got != "awssdk.ownedBodies" {
				t.Errorf("the client's HTTP client is %s, want awssdk.OwnBodies'", got)
			}
		})
	}
}

// TestS3ListPages checks that List follows continuation tokens.
func TestS3ListPages(t *testing.T) {
	var lists atomic.Int32
	srv := newFakeS3(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
				lists.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	setS3Env(t, srv.URL)
	st := openS3(t)
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
		t.Errorf("%d ListObjectsV2 requests, want 3 pages of at most 2", n)
	}
}

// TestS3ConflictWithoutConditionalHeaders checks the HeadObject check alone, against a server that never sees the
// If-Match / If-None-Match headers (as some S3-compatible servers ignore them).
func TestS3ConflictWithoutConditionalHeaders(t *testing.T) {
	var conditional atomic.Int32
	srv := newFakeS3(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != "" {
				conditional.Add(1)
				r.Header.Del("If-Match")
				r.Header.Del("If-None-Match")
			}
			h.ServeHTTP(w, r)
		})
	})
	setS3Env(t, srv.URL)
	ctx := context.Background()
	alice, bob := openS3(t), openS3(t)
	if _, err := alice.WriteIf(ctx, "demo/config", []byte("alice"), statestore.Absent); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.WriteIf(ctx, "demo/config", []byte("bob"), statestore.Absent); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("create of an existing object = %v, want ErrConflict", err)
	}
	_, gen, err := alice.Read(ctx, "demo/config")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WriteIf(ctx, "demo/config", []byte("alice 2"), gen); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.WriteIf(ctx, "demo/config", []byte("bob"), gen); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("write with a stale ETag = %v, want ErrConflict", err)
	}
	if got, _ := bob.ReadFile(ctx, "demo/config"); string(got) != "alice 2" {
		t.Errorf("object holds %q, want %q", got, "alice 2")
	}
	if conditional.Load() == 0 {
		t.Error("no request carried If-Match or If-None-Match")
	}
}

// TestS3ConflictBetweenHeadAndPut has another writer change the object after WriteIf's HeadObject and before its
// PutObject: gofakes3 honours If-Match, so the 412 must come back as statestore.ErrConflict.
func TestS3ConflictBetweenHeadAndPut(t *testing.T) {
	var interloper *store
	var once sync.Once
	srv := newFakeS3(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && (r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != "") {
				once.Do(func() {
					if err := interloper.WriteFile(r.Context(), "demo/config", []byte("interloper")); err != nil {
						t.Errorf("interloper: %v", err)
					}
				})
			}
			h.ServeHTTP(w, r)
		})
	})
	setS3Env(t, srv.URL)
	ctx := context.Background()
	st := openS3(t)
	interloper = openS3(t)
	if _, err := st.WriteIf(ctx, "demo/config", []byte("mine"), statestore.Absent); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("WriteIf(Absent) racing a create = %v, want ErrConflict", err)
	}
	if got, _ := st.ReadFile(ctx, "demo/config"); string(got) != "interloper" {
		t.Errorf("object holds %q, want %q", got, "interloper")
	}
}

func TestS3Errors(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
		check  func(error) bool
		want   string
	}{
		{403, "AccessDenied", func(err error) bool { return errors.Is(err, engine.ErrAccessDenied) }, "engine.ErrAccessDenied"},
		{503, "SlowDown", func(err error) bool { return engine.ClassOf(err) == engine.ClassRetryable }, "retryable"},
		{500, "InternalError", func(err error) bool { return engine.ClassOf(err) == engine.ClassRetryable }, "retryable"},
		{404, "NoSuchBucket", func(err error) bool {
			return !errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), "bucket does not exist")
		}, "a missing bucket, not a missing object"},
		{404, "NoSuchKey", func(err error) bool { return errors.Is(err, fs.ErrNotExist) }, "fs.ErrNotExist"},
		{400, "InvalidArgument", func(err error) bool {
			return engine.ClassOf(err) == engine.ClassTerminal && !errors.Is(err, fs.ErrNotExist)
		}, "terminal"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>test</Message></Error>`, tc.code)
			}))
			defer srv.Close()
			setS3Env(t, srv.URL)
			st := openS3(t)
			_, err := st.ReadFile(context.Background(), "demo/config")
			if err == nil || !tc.check(err) || !strings.Contains(err.Error(), "reading s3://kubeup-state/clusters/demo/config: ") {
				t.Errorf("ReadFile = %v, want %s naming the object", err, tc.want)
			}
		})
	}
}

// TestS3AWSCLI checks that an independent client, the AWS CLI, reads what the store writes and the other way
// round, through the same fake.
func TestS3AWSCLI(t *testing.T) {
	aws, err := exec.LookPath("aws")
	if err != nil {
		e2e.CannotRun(t, "the aws CLI is not installed (the Makefile installs awscli): "+
			"the check that an independent S3 client agrees with the s3:// store did not run")
	}
	srv := newFakeS3(t, nil)
	setS3Env(t, srv.URL)
	dir := t.TempDir()
	cliConfig := filepath.Join(dir, "aws-config")
	if err := os.WriteFile(cliConfig, []byte("[default]\ns3 =\n    addressing_style = path\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) {
		t.Helper()
		cmd := exec.Command(aws, append([]string{"--endpoint-url", srv.URL}, args...)...)
		var env []string
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "AWS_") || v != "" {
				env = append(env, kv) // the CLI takes an empty AWS_PROFILE for a profile named ""
			}
		}
		cmd.Env = append(env, "AWS_CONFIG_FILE="+cliConfig, "AWS_DEFAULT_REGION=us-east-1",
			"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ctx := context.Background()
	st := openS3(t)

	spec := []byte("apiVersion: kubeup.dev/v1alpha1\nkind: Cluster\n")
	if err := st.WriteFile(ctx, "demo/config", spec); err != nil {
		t.Fatal(err)
	}
	cli("s3", "cp", "s3://"+testBucket+"/clusters/demo/config", filepath.Join(dir, "config"))
	if got, err := os.ReadFile(filepath.Join(dir, "config")); err != nil || !bytes.Equal(got, spec) {
		t.Errorf("the CLI read %q (%v), want %q", got, err, spec)
	}

	ig := []byte("kind: InstanceGroup\n")
	if err := os.WriteFile(filepath.Join(dir, "nodes"), ig, 0o600); err != nil {
		t.Fatal(err)
	}
	cli("s3", "cp", filepath.Join(dir, "nodes"), "s3://"+testBucket+"/clusters/demo/instancegroup/nodes")
	got, gen, err := st.Read(ctx, "demo/instancegroup/nodes")
	if err != nil || !bytes.Equal(got, ig) {
		t.Fatalf("the store read %q (%v), want %q", got, err, ig)
	}
	if _, err := st.WriteIf(ctx, "demo/instancegroup/nodes", []byte("kind: InstanceGroup # edited\n"), gen); err != nil {
		t.Errorf("WriteIf with the ETag of the CLI's object: %v", err)
	}
}
