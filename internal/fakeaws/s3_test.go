package fakeaws

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/statestore/s3store"
)

// setAWSEnv points the SDK's default configuration at endpoint through AWS_ENDPOINT_URL, with static
// credentials and nothing from this machine's files or IMDS.
func setAWSEnv(t *testing.T, endpoint string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": endpoint, "AWS_ENDPOINT_URL_S3": "", "AWS_MAX_ATTEMPTS": "1", s3store.EnvS3PathStyle: "",
	} {
		t.Setenv(k, v)
	}
}

// TestS3StateStore runs the state store against the fake's S3: a bucket made with the SDK, then writes,
// reads, conditional writes, listing and deletes through statestore, counted by S3's operation names.
func TestS3StateStore(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	setAWSEnv(t, srv.URL)

	st, err := statestore.Open(ctx, "s3://kubeup-state/clusters")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Check(ctx); !errors.Is(err, statestore.ErrNoStore) {
		t.Errorf("Check without the bucket: %v; want ErrNoStore", err)
	}
	c := s3.NewFromConfig(testAWSConfig(srv.URL), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("kubeup-state")}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	if err := st.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	s.ResetCalls()

	if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of nothing: %v; want fs.ErrNotExist", err)
	}
	if err := st.WriteFile(ctx, "demo/config", []byte("one")); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	data, gen, err := st.Read(ctx, "demo/config")
	if err != nil || string(data) != "one" || gen == "" {
		t.Fatalf("Read: %q, %q, %v", data, gen, err)
	}
	if _, err := st.WriteIf(ctx, "demo/config", []byte("two"), statestore.Absent); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("WriteIf absent over an object: %v; want ErrConflict", err)
	}
	gen2, err := st.WriteIf(ctx, "demo/config", []byte("two"), gen)
	if err != nil || gen2 == gen {
		t.Fatalf("WriteIf at its generation: %q, %v", gen2, err)
	}
	if _, err := st.WriteIf(ctx, "demo/config", []byte("three"), gen); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("WriteIf at a former generation: %v; want ErrConflict", err)
	}
	if _, err := st.WriteIf(ctx, "demo/nodeup/nodes", []byte("n"), statestore.Absent); err != nil {
		t.Errorf("WriteIf absent: %v", err)
	}
	if err := st.WriteFile(ctx, "demo2/config", []byte("other")); err != nil {
		t.Fatal(err)
	}
	got, err := st.List(ctx, "demo")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]string{"demo/config", "demo/nodeup/nodes"}, got); diff != "" {
		t.Errorf("List(demo) (-want +got):\n%s", diff)
	}
	if data, err := st.ReadFile(ctx, "demo/config"); err != nil || string(data) != "two" {
		t.Errorf("ReadFile: %q, %v; want two", data, err)
	}
	if err := st.Delete(ctx, "demo/config"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a deleted object: %v; want fs.ErrNotExist", err)
	}

	calls := s.Calls()
	for _, op := range []string{"GetObject", "PutObject", "HeadObject", "ListObjectsV2", "DeleteObject"} {
		if calls[op] == 0 {
			t.Errorf("no %s counted: %v", op, calls)
		}
	}
	for op := range calls {
		if len(op) > 2 && op[:2] == "S3" {
			t.Errorf("an unnamed S3 operation %s: %v", op, calls)
		}
	}
}

func TestS3Operation(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		header         http.Header
		want           string
	}{
		{"GET", "/", nil, "ListBuckets"},
		{"PUT", "/b", nil, "CreateBucket"},
		{"PUT", "/b/", nil, "CreateBucket"},
		{"HEAD", "/b", nil, "HeadBucket"},
		{"DELETE", "/b", nil, "DeleteBucket"},
		{"GET", "/b?list-type=2&prefix=x", nil, "ListObjectsV2"},
		{"GET", "/b?prefix=x", nil, "ListObjects"},
		{"GET", "/b?location", nil, "GetBucketLocation"},
		{"GET", "/b?versioning", nil, "GetBucketVersioning"},
		{"POST", "/b?delete", nil, "DeleteObjects"},
		{"GET", "/b/k/x", nil, "GetObject"},
		{"HEAD", "/b/k", nil, "HeadObject"},
		{"PUT", "/b/k", nil, "PutObject"},
		{"PUT", "/b/k", http.Header{"X-Amz-Copy-Source": {"/b/j"}}, "CopyObject"},
		{"DELETE", "/b/k", nil, "DeleteObject"},
		{"POST", "/b/k?uploads", nil, "CreateMultipartUpload"},
		{"PUT", "/b/k?partNumber=1&uploadId=u", nil, "UploadPart"},
		{"POST", "/b/k?uploadId=u", nil, "CompleteMultipartUpload"},
		{"DELETE", "/b/k?uploadId=u", nil, "AbortMultipartUpload"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		for k, v := range tc.header {
			r.Header[k] = v
		}
		if got := s3Operation(r); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.method, tc.target, got, tc.want)
		}
	}
}
