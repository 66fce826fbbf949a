package awstasks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

func TestInstanceIdentity(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	f.instance(t, zoneA)
	me := f.instance(t, "us-east-1c")
	serve := func(h http.Handler) {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	}

	t.Run("an instance with a public address", func(t *testing.T) {
		serve(f.s.IMDSHandler(me.NodeID))
		got, zone, region, err := InstanceIdentity(ctx, aws.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if got != me || zone != "us-east-1c" || region != "us-east-1" {
			t.Errorf("InstanceIdentity = %+v, %s, %s, want %+v, us-east-1c, us-east-1", got, zone, region, me)
		}
	})
	t.Run("an instance without one", func(t *testing.T) {
		h := f.s.IMDSHandler(me.NodeID)
		serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/public-ipv4") {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		}))
		got, _, _, err := InstanceIdentity(ctx, aws.Config{})
		if want := (volumetasks.Holder{NodeID: me.NodeID, InternalIP: me.InternalIP}); err != nil || got != want {
			t.Errorf("InstanceIdentity = %+v, %v, want %+v", got, err, want)
		}
	})
	t.Run("IMDSv1 only: refused, never used", func(t *testing.T) {
		var v1 int
		serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/latest/api/token" {
				http.Error(w, "forbidden", http.StatusForbidden)
				return
			}
			v1++
			w.Write([]byte("i-0123"))
		}))
		if _, _, _, err := InstanceIdentity(ctx, aws.Config{}); err == nil || !strings.Contains(err.Error(), "instance-id") {
			t.Errorf("InstanceIdentity = %v, want an error", err)
		}
		if v1 != 0 {
			t.Errorf("%d metadata requests without a token", v1)
		}
	})
}
