package fakeaws

import (
	"net/http"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3 is what the state store needs (and the AWS CLI's s3 commands): gofakes3 in memory, buckets addressed by path
// (http://endpoint/bucket/key), as the SDK does with an endpoint override and the state store asks for. It keeps
// its own lock; the counts name the operations as S3 does.

// newS3 is the S3 of the state store: gofakes3 in memory, path-style buckets.
func newS3() http.Handler {
	return gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
}

// s3Operation names the S3 operation of a path-style request: ListBuckets; CreateBucket, HeadBucket,
// DeleteBucket, ListObjectsV2 (ListObjects for version 1), GetBucketLocation, DeleteObjects...; GetObject,
// PutObject, CopyObject, HeadObject, DeleteObject and the multipart upload's operations.
func s3Operation(r *http.Request) string {
	q := r.URL.Query()
	has := func(k string) bool { _, ok := q[k]; return ok }
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case bucket == "":
		if r.Method == http.MethodGet {
			return "ListBuckets"
		}
	case key == "":
		switch r.Method {
		case http.MethodPut:
			for _, sub := range []string{"versioning", "tagging", "policy", "acl", "cors", "lifecycle", "encryption"} {
				if has(sub) {
					return "PutBucket" + s3SubName(sub)
				}
			}
			return "CreateBucket"
		case http.MethodHead:
			return "HeadBucket"
		case http.MethodDelete:
			return "DeleteBucket"
		case http.MethodPost:
			if has("delete") {
				return "DeleteObjects"
			}
		case http.MethodGet:
			switch {
			case q.Get("list-type") == "2":
				return "ListObjectsV2"
			case has("location"):
				return "GetBucketLocation"
			case has("uploads"):
				return "ListMultipartUploads"
			case has("versions"):
				return "ListObjectVersions"
			}
			for _, sub := range []string{"versioning", "tagging", "policy", "acl", "cors", "lifecycle", "encryption"} {
				if has(sub) {
					return "GetBucket" + s3SubName(sub)
				}
			}
			return "ListObjects"
		}
	default:
		switch r.Method {
		case http.MethodGet:
			switch {
			case has("tagging"):
				return "GetObjectTagging"
			case has("uploadId"):
				return "ListParts"
			}
			return "GetObject"
		case http.MethodHead:
			return "HeadObject"
		case http.MethodPut:
			switch {
			case has("uploadId") && r.Header.Get("X-Amz-Copy-Source") != "":
				return "UploadPartCopy"
			case has("uploadId"):
				return "UploadPart"
			case has("tagging"):
				return "PutObjectTagging"
			case r.Header.Get("X-Amz-Copy-Source") != "":
				return "CopyObject"
			}
			return "PutObject"
		case http.MethodDelete:
			if has("uploadId") {
				return "AbortMultipartUpload"
			}
			return "DeleteObject"
		case http.MethodPost:
			switch {
			case has("uploads"):
				return "CreateMultipartUpload"
			case has("uploadId"):
				return "CompleteMultipartUpload"
			}
		}
	}
	return "S3" + r.Method // no operation S3 has: gofakes3 answers with its error
}

// s3SubName is a bucket sub-resource as operations name it: "versioning" is "Versioning", "cors" is "Cors".
func s3SubName(sub string) string { return strings.ToUpper(sub[:1]) + sub[1:] }
