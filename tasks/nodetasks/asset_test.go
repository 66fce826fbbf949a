package nodetasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

const kubeletBinary = "#!/bin/sh\necho kubelet\n"

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// assetServer serves files by URL path and counts the downloads.
func assetServer(t *testing.T, files map[string]string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var count atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch body, ok := files[r.URL.Path]; {
		case r.URL.Path == "/500":
			http.Error(w, "try later", http.StatusInternalServerError)
		case r.URL.Path == "/truncated": // a download cut short, as by a kill of either end
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte("#!/bin/sh\n"))
		case !ok:
			http.NotFound(w, r)
		default:
			count.Add(1)
			w.Write([]byte(body))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &count
}

func TestAssetApplyThenNoChanges(t *testing.T) {
	srv, downloads := assetServer(t, map[string]string{"/kubelet": kubeletBinary})
	n := testNode(t, nil)
	build := func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &Asset{Path: "/usr/local/bin/kubelet", URL: srv.URL + "/kubelet", SHA256: sha(kubeletBinary),
			Mode: ptr(os.FileMode(0o755))})
		return g
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), n, build)
	if got := downloads.Load(); got != 1 {
		t.Errorf("downloads = %d, want 1: a file with the right hash is the cache", got)
	}
	host := filepath.Join(n.Root, "usr/local/bin/kubelet")
	if b, err := os.ReadFile(host); err != nil || string(b) != kubeletBinary {
		t.Errorf("kubelet = %q, %v", b, err)
	}

	// Verified on every run: a file changed on the node is downloaded again.
	if err := os.WriteFile(host, []byte("tampered"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(context.Background(), build(), n, engine.Options{Target: engine.Apply})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Empty() || downloads.Load() != 2 {
		t.Errorf("a tampered file: plan empty %v, downloads %d; want a change and a second download", res.Plan.Empty(), downloads.Load())
	}
}

func TestAssetRenderErrors(t *testing.T) {
	srv, _ := assetServer(t, map[string]string{"/kubelet": kubeletBinary})
	tests := []struct {
		name      string
		url       string
		wantErr   string
		wantClass engine.Class
	}{
		{name: "hash mismatch", url: "/kubelet", wantErr: "sha256 mismatch: got " + sha(kubeletBinary), wantClass: engine.ClassTerminal},
		{name: "not found", url: "/none", wantErr: "404 Not Found", wantClass: engine.ClassTerminal},
		{name: "server error", url: "/500", wantErr: "500 Internal Server Error", wantClass: engine.ClassRetryable},
		{name: "cut short", url: "/truncated", wantErr: "unexpected EOF", wantClass: engine.ClassRetryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := testNode(t, nil)
			a := &Asset{Path: "/opt/bin/kubelet", URL: srv.URL + tt.url, SHA256: sha("something else")}
			err := a.Render(context.Background(), n, nil, a, a)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Render error = %v, want one containing %q", err, tt.wantErr)
			}
			if got := engine.ClassOf(err); got != tt.wantClass {
				t.Errorf("error class = %v, want %v", got, tt.wantClass)
			}
			entries, err := os.ReadDir(filepath.Join(n.Root, "opt/bin"))
			if err != nil || len(entries) != 0 {
				t.Errorf("left behind in /opt/bin: %v (%v)", entries, err)
			}
		})
	}
}

func TestAssetCheckChanges(t *testing.T) {
	good := sha(kubeletBinary)
	dir := &Asset{Path: "/x", found: &fileStat{typ: "directory"}}
	tests := []struct {
		name    string
		actual  *Asset
		asset   *Asset
		wantErr string
	}{
		{name: "ok", asset: &Asset{Path: "/x", URL: "https://dl.k8s.io/kubelet", SHA256: good}},
		{name: "no sha256", asset: &Asset{Path: "/x", URL: "https://dl.k8s.io/kubelet"}, wantErr: "field SHA256 is required"},
		{name: "short sha256", asset: &Asset{Path: "/x", URL: "https://dl.k8s.io/kubelet", SHA256: "abc"}, wantErr: "is not a sha256 in hex"},
		{name: "uppercase", asset: &Asset{Path: "/x", URL: "https://dl.k8s.io/kubelet", SHA256: strings.ToUpper(good)},
			wantErr: "write it in lowercase: \"" + good},
		{name: "not http", asset: &Asset{Path: "/x", URL: "ftp://host/kubelet", SHA256: good}, wantErr: "is not an http://, https://, file:///, s3:// or gs:// URL"},
		{name: "a directory in the way", actual: dir, asset: &Asset{Path: "/x", URL: "http://h/k", SHA256: good}, wantErr: "/x is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.asset.CheckChanges(tt.actual, tt.asset, tt.asset)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckChanges: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckChanges error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestAssetDeps(t *testing.T) {
	enginetest.CheckDeps(t, &Asset{Path: "/x", After: []engine.Task{&File{Path: "/y"}}})
}
