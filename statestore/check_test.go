package statestore

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/fakegcs"
)

// TestCheck: a store whose root exists is fine, empty or not; a missing directory or bucket is ErrNoStore,
// naming it; a file where the directory should be is an error too, but not ErrNoStore.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)()
			err := st.Check(ctx)
			if b.name == "file" {
				if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), st.URL()+": the state store does not exist: no such directory") {
					t.Errorf("Check of a directory not yet made = %v, want ErrNoStore naming %s", err, st.URL())
				}
				if !CreatesRoot(st) {
					t.Error("CreatesRoot(file://) = false")
				}
			} else {
				if err != nil {
					t.Errorf("Check of an empty bucket = %v, want nil", err)
				}
				if CreatesRoot(st) {
					t.Errorf("CreatesRoot(%s) = true: no store makes a bucket", st.URL())
				}
			}
			if err := st.WriteFile(ctx, "demo/config", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := st.Check(ctx); err != nil {
				t.Errorf("Check after a write = %v", err)
			}
		})
	}

	t.Run("file is not a directory", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "state")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		err := mustOpen(t, f).Check(ctx)
		if err == nil || errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "state store file://"+f+": "+f+" is not a directory") {
			t.Errorf("Check of a file = %v, want that it is not a directory", err)
		}
	})
	t.Run("s3 missing bucket", func(t *testing.T) {
		srv := newFakeS3(t, nil)
		setS3Env(t, srv.URL)
		err := mustOpen(t, "s3://no-such-bucket/clusters").Check(ctx)
		if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "state store s3://no-such-bucket/clusters: the state store does not exist: no such bucket no-such-bucket") {
			t.Errorf("Check = %v, want ErrNoStore naming the bucket", err)
		}
	})
	t.Run("gs missing bucket", func(t *testing.T) {
		srv := httptest.NewServer(fakegcs.New(testBucket))
		t.Cleanup(srv.Close)
		t.Setenv(EnvStorageEmulatorHost, srv.URL)
		err := mustOpen(t, "gs://no-such-bucket").Check(ctx)
		if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "state store gs://no-such-bucket: the state store does not exist: no such bucket no-such-bucket") {
			t.Errorf("Check = %v, want ErrNoStore naming the bucket", err)
		}
	})
}
