package fakeaws

import (
	"net/http"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// STUB (the Route53/IAM/IMDS helper may refine this file).

// newS3 is the S3 of the state store: gofakes3 in memory, path-style buckets.
func newS3() http.Handler {
	return gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
}

// s3Operation names the S3 operation of a request, roughly: GetObject, PutObject, HeadObject, DeleteObject,
// ListObjects, CreateBucket...
func s3Operation(r *http.Request) string { return "S3" + r.Method }
