package awssdk

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// closingBody is a request body as the SDK hands it to the HTTP client: once closed, reading it fails.
type closingBody struct {
	mu     sync.Mutex
	r      io.Reader
	closed bool
}

var errClosedBody = errors.New("read on a closed body")

func (b *closingBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosedBody
	}
	return b.r.Read(p)
}

func (b *closingBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// transportAfterAnswer is a client that, like net/http's transport when the answer comes early, reads what is
// left of the body after the SDK has closed the one it made: the read the SDK's close breaks.
type transportAfterAnswer struct{ sdkBody *closingBody }

func (c transportAfterAnswer) Do(req *http.Request) (*http.Response, error) {
	c.sdkBody.Close() // the answer's headers arrived: the SDK closes its body
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return nil, err // net/http: a write error, and the connection closed under the answer
	}
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

func request(t *testing.T, body *closingBody, n int64) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://ec2.example/", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = n
	return req
}

func TestOwnBodiesSurviveTheSDKClosingItsBody(t *testing.T) {
	const form = "Action=DescribeImages&Version=2016-11-15"
	t.Run("without", func(t *testing.T) { // the race, made certain: what OwnBodies is for
		body := &closingBody{r: strings.NewReader(form)}
		if _, err := (transportAfterAnswer{body}).Do(request(t, body, int64(len(form)))); !errors.Is(err, errClosedBody) {
			t.Fatalf("Do = %v, want the closed body's error", err)
		}
	})
	t.Run("with", func(t *testing.T) {
		body := &closingBody{r: strings.NewReader(form)}
		var sent string
		c := OwnBodies(doerFunc(func(req *http.Request) (*http.Response, error) {
			body.Close()
			b, err := io.ReadAll(req.Body)
			sent = string(b)
			if err != nil {
				return nil, err
			}
			again, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			if b, _ := io.ReadAll(again); string(b) != form {
				t.Errorf("GetBody gives %q, want %q", b, form)
			}
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
		}))
		if _, err := c.Do(request(t, body, int64(len(form)))); err != nil {
			t.Fatalf("Do: %v", err)
		}
		if sent != form {
			t.Errorf("the transport sent %q, want %q", sent, form)
		}
	})
	t.Run("a body shorter than its Content-Length", func(t *testing.T) {
		body := &closingBody{r: strings.NewReader(form)}
		_, err := OwnBodies(doerFunc(func(*http.Request) (*http.Response, error) {
			t.Error("the request was sent")
			return nil, nil
		})).Do(request(t, body, int64(len(form))+1))
		if err == nil || !strings.Contains(err.Error(), "Content-Length says") {
			t.Errorf("Do = %v, want the length mismatch", err)
		}
	})
	t.Run("larger than MaxOwnedBody: sent as it is", func(t *testing.T) {
		body := &closingBody{r: strings.NewReader(form)}
		req := request(t, body, MaxOwnedBody+1)
		var got io.ReadCloser
		OwnBodies(doerFunc(func(r *http.Request) (*http.Response, error) { got = r.Body; return nil, nil })).Do(req)
		if got != body {
			t.Errorf("a body over MaxOwnedBody was replaced")
		}
	})
}

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
