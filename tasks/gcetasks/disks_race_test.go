package gcetasks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// An instance that loses the race for a disk, and whose read of the disk after the refused attachDisk fails with
// a 5xx, is told to try again (retryable), not failed with the refusal; its next try is told who holds the disk.
// (Found by test/gce's TestFaultMatrix: the loser failed with 400 resourceInUseByAnotherResource.)
func TestDisksLostRaceWhileTheReadFails(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	s := defaultSpec()
	s.size = 2
	mustRun(t, c, engine.Apply, clusterGraph(s))
	var names []string
	err := c.Compute.Instances.List(testProject, zones[0]).Pages(ctx, func(l *compute.InstanceList) error {
		for _, i := range l.Items {
			names = append(names, i.Name)
		}
		return nil
	})
	if err != nil || len(names) != 2 {
		t.Fatalf("instances of zone a: %v, %v", names, err)
	}
	disk := "a-etcd-main-gce-example-com"
	winner := NewDisks(c.Compute, testProject, zones[0], volumetasks.Holder{NodeID: names[0]}, DisksOptions{Root: t.TempDir()})
	if _, err := winner.Attach(ctx, disk); engine.ClassOf(err) != engine.ClassNotReady {
		t.Fatalf("the winner's Attach: %v, want attached (not ready: no device in its root)", err)
	}

	// The loser sees the disk as it was before the winner's attachDisk (no users), then its own attachDisk is
	// refused, then its next read of the disk fails with a 503.
	var reads atomic.Int32
	front := httptest.NewServer(srv)
	t.Cleanup(front.Close)
	target, _ := url.Parse(front.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	racing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/disks/"+disk) {
			proxy.ServeHTTP(w, r)
			return
		}
		switch reads.Add(1) {
		case 1: // stale: the winner's attachment not visible yet
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, r)
			body := bytes.ReplaceAll(rec.Body.Bytes(), []byte(`"users"`), []byte(`"formerUsers"`))
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		case 2:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":503,"message":"backend error","errors":[{"reason":"backendError","message":"backend error"}]}}`)
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(racing.Close)
	cs, _, err := servicesAt(ctx, racing.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	loser := NewDisks(cs, testProject, zones[0], volumetasks.Holder{NodeID: names[1]}, DisksOptions{Root: t.TempDir()})
	_, err = loser.Attach(ctx, disk)
	if engine.ClassOf(err) != engine.ClassRetryable || !strings.Contains(err.Error(), "resourceInUseByAnotherResource") {
		t.Fatalf("the loser's Attach while its read fails: %v (class %s), want retryable, saying the disk is in use", err, engine.ClassOf(err))
	}
	_, err = loser.Attach(ctx, disk)
	var held *volumetasks.HeldError
	if !errors.As(err, &held) || held.Holder.NodeID != names[0] {
		t.Fatalf("the loser's next Attach: %v, want held by %s", err, names[0])
	}
}
