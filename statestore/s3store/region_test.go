package s3store

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"kubeup.dev/kubeup/statestore"
)

// TestBucketRegion: S3 names a bucket's region in a header of HeadBucket's answer, whether it is a success, a
// redirect (the bucket is in another region) or a refusal; a machine with no region configured reads its
// configuration from the bucket's region.
func TestBucketRegion(t *testing.T) {
	for _, tc := range []struct {
		name         string
		status       int
		header       string
		want         string
		wantAnswered bool
	}{
		{name: "in the region asked", status: http.StatusOK, header: "us-east-1", want: "us-east-1", wantAnswered: true},
		{name: "redirected", status: http.StatusMovedPermanently, header: "eu-west-3", want: "eu-west-3", wantAnswered: true},
		{name: "refused", status: http.StatusForbidden, header: "ap-south-1", want: "ap-south-1", wantAnswered: true},
		{name: "not said", status: http.StatusNotFound, want: "", wantAnswered: true},
		{name: "server error", status: http.StatusInternalServerError, want: "", wantAnswered: false},
		{name: "throttled", status: http.StatusServiceUnavailable, want: "", wantAnswered: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodHead {
					t.Errorf("%s %s, want a HEAD of the bucket", r.Method, r.URL.Path)
				}
				if tc.header != "" {
					w.Header().Set("X-Amz-Bucket-Region", tc.header)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			client := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""),
				BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1}, func(o *s3.Options) { o.UsePathStyle = true })
			if got, answered := bucketRegion(context.Background(), client, "kubeup-state"); got != tc.want || answered != tc.wantAnswered {
				t.Errorf("bucketRegion = %q, %v; want %q, %v", got, answered, tc.want, tc.wantAnswered)
			}
		})
	}
}

// TestS3RegionLookupRecovers: a store opened while S3 could not say where its bucket is (the lookup failed: no
// network yet at boot, a server error) asks again at its next use, and from then on works in the bucket's region.
// It used to keep us-east-1 for the life of the store: nodeup keeps its store across retries, and every retry
// was sent to the wrong region.
func TestS3RegionLookupRecovers(t *testing.T) {
	const bucket, region = "kubeup-state", "eu-west-3"
	var heads atomic.Int32
	var down atomic.Bool // the lookups fail while it is set
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// SigV4: Credential=<key>/<date>/<region>/s3/aws4_request
		signedFor := ""
		if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
			if parts := strings.Split(cred, "/"); len(parts) > 2 {
				signedFor = parts[2]
			}
		}
		switch {
		case r.Method == http.MethodHead && (r.URL.Path == "/" || r.URL.Path == ""):
			heads.Add(1)
			if down.Load() {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.Header().Set("X-Amz-Bucket-Region", region)
			if signedFor != region {
				w.WriteHeader(http.StatusMovedPermanently)
			}
		case r.Method == http.MethodGet && r.URL.Path == "/demo/config":
			if signedFor != region {
				w.Header().Set("X-Amz-Bucket-Region", region)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusMovedPermanently)
				fmt.Fprintf(w, `<Error><Code>PermanentRedirect</Code><Message>The bucket is in %s; signed for %s</Message></Error>`, region, signedFor)
				return
			}
			w.Write([]byte("config"))
		default:
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	// No endpoint override (with one, the region is not looked up): the requests for the bucket's host name are
	// sent to the test server.
	cfg := aws.Config{Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""), RetryMaxAttempts: 1,
		HTTPClient: toServer{srv}}
	st := fromConfig(context.Background(), cfg, statestore.Bucket{Scheme: "s3", Name: bucket})
	if _, err := st.ReadFile(context.Background(), "demo/config"); err == nil {
		t.Fatal("the first read, in us-east-1, worked: the test server did not refuse it")
	}
	down.Store(false)
	data, err := st.ReadFile(context.Background(), "demo/config")
	if err != nil || string(data) != "config" {
		t.Fatalf("ReadFile once S3 says where the bucket is = %q, %v; want its contents", data, err)
	}
	if got := st.client.Options().Region; got != region {
		t.Errorf("the store's region is %s, want %s", got, region)
	}
	n := heads.Load()
	if _, err := st.ReadFile(context.Background(), "demo/config"); err != nil {
		t.Fatal(err)
	}
	if heads.Load() != n {
		t.Errorf("the region was looked up again once S3 had said it")
	}
}

// toServer sends every request to srv, whatever its host: the SDK's requests for AWS's host names.
type toServer struct{ srv *httptest.Server }

func (c toServer) Do(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = "http", strings.TrimPrefix(c.srv.URL, "http://")
	return http.DefaultTransport.RoundTrip(r)
}
