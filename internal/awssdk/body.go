package awssdk

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// MaxOwnedBody is the largest request body OwnBodies copies: an EC2, Auto Scaling or IAM call's form is a few
// KiB, a state-store object rarely more than this; larger ones are sent as the SDK made them.
const MaxOwnedBody = 1 << 20

// Doer is an HTTP client as the SDK's service clients take one (their HTTPClient option).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// OwnBodies wraps next so that the transport sends a copy of each request body (of a known length up to
// MaxOwnedBody), which the SDK cannot close under it. A service client takes it in an option function that runs
// after the service has set its own timeouts on its HTTP client (NewFromConfig's, or aws.Config.ServiceOptions):
//
//	s3.NewFromConfig(cfg, func(o *s3.Options) { o.HTTPClient = awssdk.OwnBodies(o.HTTPClient) })
//
// allservices.ServiceOption does that for every service kubeup uses; a package that makes clients of one service
// only (the S3 state store) does it itself, so that it links that service alone.
//
// Why: the SDK (smithy-go's ClientHandler) closes the request body as soon as the response's headers arrive.
// net/http, having written Content-Length bytes, still reads the body once more to check that nothing is left;
// when the SDK's close comes first, that read fails, and the transport closes the connection while the response
// body is being read. The call then fails with "deserialization failed ... use of closed network connection"
// although the server has done what it was asked, and the retry that follows sends a RunInstances or a
// CreateVolume twice. A server that answers fast (the fakes on loopback, a loaded machine) loses the race often.
func OwnBodies(next Doer) Doer {
	if next == nil {
		return nil
	}
	if o, ok := next.(ownedBodies); ok {
		return o
	}
	return ownedBodies{next}
}

type ownedBodies struct{ next Doer }

func (c ownedBodies) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength <= 0 || req.ContentLength > MaxOwnedBody {
		return c.next.Do(req)
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, req.ContentLength))
	if err != nil {
		return nil, fmt.Errorf("reading the body of %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	if int64(len(b)) != req.ContentLength {
		return nil, fmt.Errorf("the body of %s %s holds %d bytes, its Content-Length says %d", req.Method, req.URL.Redacted(), len(b), req.ContentLength)
	}
	own := req.Clone(req.Context())
	own.Body = io.NopCloser(bytes.NewReader(b))
	own.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return c.next.Do(own)
}
