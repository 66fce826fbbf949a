package nodeup

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/statestore/gsstore"
	"kubeup.dev/kubeup/statestore/s3store"
)

const testBucket = "kubeup-state"

// storeBackends start a fake object store, point the state store's client at it, and return its URL.
var storeBackends = []struct {
	scheme string
	start  func(t *testing.T, wrap func(http.Handler) http.Handler) string
}{
	{"s3", func(t *testing.T, wrap func(http.Handler) http.Handler) string {
		mem := s3mem.New()
		if err := mem.CreateBucket(testBucket); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(wrap(gofakes3.New(mem, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()))
		t.Cleanup(srv.Close)
		none := filepath.Join(t.TempDir(), "none")
		for k, v := range map[string]string{
			"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "",
			"AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
			"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
			"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": srv.URL, "AWS_MAX_ATTEMPTS": "1", s3store.EnvS3PathStyle: "",
		} {
			t.Setenv(k, v)
		}
		return "s3://" + testBucket + "/clusters"
	}},
	{"gs", func(t *testing.T, wrap func(http.Handler) http.Handler) string {
		srv := httptest.NewServer(wrap(fakegcs.New(testBucket)))
		t.Cleanup(srv.Close)
		t.Setenv(gsstore.EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
		return "gs://" + testBucket + "/clusters"
	}},
}

func noWrap(h http.Handler) http.Handler { return h }

// putConf writes the configuration of group to the store as `kubeup update cluster` does, and returns its URL.
func putConf(t *testing.T, storeURL, group string, obj []byte) string {
	t.Helper()
	ctx := context.Background()
	st, err := statestore.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	p := model.NodeConfigPath(testCluster, group)
	if err := st.WriteFile(ctx, p, obj); err != nil {
		t.Fatal(err)
	}
	return storeURL + "/" + p
}

func TestStateStore(t *testing.T) {
	obj := nodeConfig(t, "control-plane-a")
	for _, b := range storeBackends {
		t.Run(b.scheme, func(t *testing.T) {
			storeURL := b.start(t, noWrap)
			conf := putConf(t, storeURL, "control-plane-a", obj)
			root := t.TempDir()
			if r := run(t, Options{Conf: conf, Root: root, DryRun: true}); r.runErr != nil || !strings.Contains(r.out, "SystemdService/kubelet.service") {
				t.Fatalf("dry run of %s: err %v, printed:\n%s", conf, r.runErr, r.out)
			}

			t.Run("missing", func(t *testing.T) {
				r := run(t, Options{Conf: storeURL + "/" + model.NodeConfigPath(testCluster, "absent"), Root: root, Retries: -1})
				var ce *ConfigError
				if !errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), "nodeup/absent does not exist") {
					t.Errorf("Run error = %v, want a *ConfigError saying nodeup/absent does not exist", r.runErr)
				}
			})
			t.Run("changed", func(t *testing.T) {
				changed := bytes.Clone(obj)
				changed[len(changed)-2] = ' '
				conf := putConf(t, storeURL, "changed", changed)
				r := run(t, Options{Conf: conf, Root: root, Retries: -1, ConfigWait: 10 * time.Millisecond, ConfigPollInterval: time.Millisecond})
				var ce *ConfigError
				if !errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), conf+": content does not match its sha256") {
					t.Errorf("Run error = %v, want a *ConfigError about the sha256 of %s", r.runErr, conf)
				}
			})
			t.Run("completed during the wait", func(t *testing.T) {
				conf := putConf(t, storeURL, "late", obj[:len(obj)/2])
				stderr := &onNote{note: waitNote, do: func() { putConf(t, storeURL, "late", obj) }}
				err := Run(context.Background(), Options{Conf: conf, Root: t.TempDir(), DryRun: true, Err: stderr, Logger: testLogger(t),
					ConfigWait: time.Hour, ConfigPollInterval: time.Millisecond})
				if err != nil || !stderr.done {
					t.Errorf("Run: %v (waited: %v)\n%s", err, stderr.done, &stderr.w)
				}
			})
		})
	}
}

// TestStateStoreUnavailable: a store that fails (a server error, as when the network is not up yet at boot) is
// tried again; without retries the run fails.
func TestStateStoreUnavailable(t *testing.T) {
	obj := nodeConfig(t, "nodes")
	for _, b := range storeBackends {
		t.Run(b.scheme, func(t *testing.T) {
			var failing atomic.Int32
			storeURL := b.start(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if failing.Load() > 0 {
						failing.Add(-1)
						http.Error(w, "unavailable", http.StatusServiceUnavailable)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
			conf := putConf(t, storeURL, "nodes", obj)

			failing.Store(1)
			r := run(t, Options{Conf: conf, Root: t.TempDir(), DryRun: true})
			var ce *ConfigError
			if r.runErr == nil || errors.As(r.runErr, &ce) {
				t.Errorf("Run error = %v, want a failure to read the store that is not a *ConfigError", r.runErr)
			}

			failing.Store(2)
			var logs bytes.Buffer
			r = run(t, Options{Conf: conf, Root: t.TempDir(), DryRun: true, Retries: 3, RetryBackoff: time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if r.runErr != nil {
				t.Fatalf("Run: %v\n%s", r.runErr, &logs)
			}
			if n := strings.Count(logs.String(), `msg="nodeup failed; retrying"`); n != 2 {
				t.Errorf("logged %d retries, want 2:\n%s", n, &logs)
			}
		})
	}
}

func TestParseConf(t *testing.T) {
	tests := []struct {
		conf                   string
		file, storeURL, object string
		wantErr                string
	}{
		{conf: "/etc/kubeup/conf", file: "/etc/kubeup/conf"},
		{conf: "file:///etc/kubeup/conf", file: "/etc/kubeup/conf"},
		{conf: "file://localhost/etc/kubeup/conf", file: "/etc/kubeup/conf"},
		{conf: "s3://b/p/demo/nodeup/nodes", storeURL: "s3://b/p/demo/nodeup", object: "nodes"},
		{conf: "gs://b/nodes", storeURL: "gs://b", object: "nodes"},
		{conf: "file://host/etc/conf", wantErr: "a file URL names an absolute path"},
		{conf: "gs://b/", wantErr: "want gs://bucket/key"},
		{conf: "s3://b/x?v=1", wantErr: "unexpected user, query or fragment"},
		{conf: "ftp://b/x", wantErr: `unsupported scheme "ftp"`},
	}
	for _, tt := range tests {
		src, err := parseConf(tt.conf)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseConf(%q) error = %v, want %q", tt.conf, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseConf(%q): %v", tt.conf, err)
			continue
		}
		if src.file != tt.file || src.storeURL != tt.storeURL || src.object != tt.object {
			t.Errorf("parseConf(%q) = file %q, store %q, object %q; want %q, %q, %q", tt.conf,
				src.file, src.storeURL, src.object, tt.file, tt.storeURL, tt.object)
		}
	}
}

// TestStoreCredentialsRetried: a gs:// store whose credentials cannot be found yet (no credentials file, and the
// metadata server does not answer: a blip at boot) is not a *ConfigError: nodeup retries it, opening the store
// again each time. It was a *ConfigError, never retried.
func TestStoreCredentialsRetried(t *testing.T) {
	var asked atomic.Int32
	md := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "not yet", http.StatusNotFound)
	}))
	defer md.Close()
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	t.Setenv(gsstore.EnvStorageEmulatorHost, "")

	var logs bytes.Buffer
	r := run(t, Options{Conf: "gs://" + testBucket + "/clusters/" + model.NodeConfigPath(testCluster, "nodes"), Root: t.TempDir(),
		Retries: 1, RetryBackoff: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var ce *ConfigError
	if r.runErr == nil || errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), "the metadata server does not answer") {
		t.Errorf("Run error = %v, want one that is not a *ConfigError, saying the metadata server does not answer", r.runErr)
	}
	if n := strings.Count(logs.String(), `msg="nodeup failed; retrying"`); n != 1 {
		t.Errorf("logged %d retries, want 1:\n%s", n, &logs)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the metadata server was asked %d times, want 2: once per run", n)
	}
}
