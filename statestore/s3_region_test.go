package statestore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestBucketRegion: S3 names a bucket's region in a header of HeadBucket's answer, whether it is a success, a
// redirect (the bucket is in another region) or a refusal; a machine with no region configured reads its
// configuration from the bucket's region.
func TestBucketRegion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header string
		want   string
	}{
		{name: "in the region asked", status: http.StatusOK, header: "us-east-1", want: "us-east-1"},
		{name: "redirected", status: http.StatusMovedPermanently, header: "eu-west-3", want: "eu-west-3"},
		{name: "refused", status: http.StatusForbidden, header: "ap-south-1", want: "ap-south-1"},
		{name: "not said", status: http.StatusNotFound, want: ""},
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
			if got := bucketRegion(context.Background(), client, "kubeup-state"); got != tc.want {
				t.Errorf("bucketRegion = %q, want %q", got, tc.want)
			}
		})
	}
}
