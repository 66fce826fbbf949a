package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// TestStateStoreMustExist: every command but create fails on a state store that is not there (a typo in --state),
// naming it, instead of finding nothing in it; create makes a file:// store's directory, never a bucket; get
// clusters in an empty store says so on stderr and exits 0.
func TestStateStoreMustExist(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo")
	const name = "demo.example.com"
	for _, args := range [][]string{
		{"get", "clusters"},
		{"get", "cluster", name},
		{"get", "instancegroups", name},
		{"edit", "cluster", name},
		{"update", "cluster", name},
		{"delete", "cluster", name},
		{"graph", name},
		{"export", "kubeconfig", name},
	} {
		_, _, err := kubeup(t, typo, args...)
		if err == nil || !strings.Contains(err.Error(), "state store file://"+typo+": the state store does not exist: no such directory: check --state") {
			t.Errorf("kubeup %s on a missing store: %v, want an error naming it", strings.Join(args, " "), err)
		}
	}
	if _, err := os.Stat(typo); !os.IsNotExist(err) {
		t.Errorf("a command on a missing store made it: %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kubeup(t, file, "get", "clusters"); err == nil || !strings.Contains(err.Error(), file+" is not a directory") {
		t.Errorf("get clusters on a file: %v, want that it is not a directory", err)
	}

	mustKubeup(t, typo, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	if out := mustKubeup(t, typo, "get", "clusters"); !strings.Contains(out, name) {
		t.Errorf("create on a missing file:// store did not make it:\n%s", out)
	}
	mustKubeup(t, typo, "delete", "cluster", name, "--yes")
	out, stderr, err := kubeup(t, typo, "get", "clusters")
	if err != nil || strings.Contains(out, name) || !strings.Contains(stderr, "No clusters in state store file://"+typo) {
		t.Errorf("get clusters in an empty store: %v, printed %q, on stderr %q; want that it is empty, on stderr", err, out, stderr)
	}

	// s3://: a bucket that does not exist is an error for create too.
	mem := s3mem.New()
	if err := mem.CreateBucket("kubeup-state"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(mem, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	defer srv.Close()
	none := filepath.Join(dir, "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": srv.URL, "AWS_MAX_ATTEMPTS": "1",
	} {
		t.Setenv(k, v)
	}
	for _, args := range [][]string{
		{"--state", "s3://kubeup-typo/clusters", "create", "cluster", name, "--cloud", "local", "--zones", "a"},
		{"--state", "s3://kubeup-typo/clusters", "get", "clusters"},
	} {
		if _, _, err := kubeup(t, "", args...); err == nil || !strings.Contains(err.Error(), "state store s3://kubeup-typo/clusters: the state store does not exist: no such bucket kubeup-typo") {
			t.Errorf("kubeup %s: %v, want the missing bucket named", strings.Join(args, " "), err)
		}
	}
	if _, stderr, err := kubeup(t, "", "--state", "s3://kubeup-state/clusters", "get", "clusters"); err != nil || !strings.Contains(stderr, "No clusters in state store s3://kubeup-state/clusters") {
		t.Errorf("get clusters in an empty bucket: %v, on stderr %q", err, stderr)
	}
}
