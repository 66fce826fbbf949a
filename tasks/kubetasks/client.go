package kubetasks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
)

// World is a world that reaches a cluster's API: the tasks of this package converge objects through it.
type World interface {
	KubeAPI() *Client
}

// FieldManager is kubeup's field manager in server-side apply, on both sides (protokube, kubeup update cluster):
// the objects kubeup keeps in a cluster are kubeup's whichever side applied them.
const FieldManager = "kubeup"

// Client is a client of kube-apiserver: HTTPS to Server, authenticated by a client certificate, trusting one CA.
type Client struct {
	// Server is the API's URL: https://127.0.0.1:443.
	Server string
	// FieldManager names kubeup in server-side apply (managedFields).
	FieldManager string
	http         *http.Client
}

// requestTimeout bounds one request: the API answers a GET or a PATCH within it, or the task tries again.
const requestTimeout = 20 * time.Second

// NewClient returns a client of the API at server that trusts caPEM and presents the certificate and key in PEM.
func NewClient(server, fieldManager string, caPEM, certPEM, keyPEM []byte) (*Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the API's CA holds no PEM certificate")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the client certificate of %s: %w", fieldManager, err)
	}
	conf := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return &Client{Server: strings.TrimSuffix(server, "/"), FieldManager: fieldManager,
		http: &http.Client{Timeout: requestTimeout, Transport: &http.Transport{TLSClientConfig: conf, Proxy: nil}}}, nil
}

// StatusError is an answer of the API that is not a success: its HTTP status and the Status object's reason and
// message.
type StatusError struct {
	Method, Path string
	Code         int
	Reason       string
	Message      string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Code, e.Reason, e.Message)
}

// IsNotFound reports whether err is the API's 404; IsConflict its 409 (an object changed since it was read).
func IsNotFound(err error) bool { return statusCode(err) == http.StatusNotFound }
func IsConflict(err error) bool { return statusCode(err) == http.StatusConflict }

// IsForbidden reports whether err is the API's 403: the client's identity may not do that (RBAC).
func IsForbidden(err error) bool { return statusCode(err) == http.StatusForbidden }

func statusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// Get reads the object at path into out (decoded from JSON).
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, "", nil, out)
}

// Apply applies body (YAML or JSON: the fields kubeup manages) to the object at path by server-side apply, as
// FieldManager, taking over fields another manager set (force): kubeup owns what it applies.
func (c *Client) Apply(ctx context.Context, path string, body []byte, out any) error {
	q := url.Values{"fieldManager": {c.FieldManager}, "force": {"true"}}
	return c.do(ctx, http.MethodPatch, path+"?"+q.Encode(), "application/apply-patch+yaml", body, out)
}

// Delete deletes the object at path; one that is gone already is no error.
func (c *Client) Delete(ctx context.Context, path string) error {
	if err := c.do(ctx, http.MethodDelete, path, "", nil, nil); err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// Put replaces the object (or subresource) at path with in, as JSON.
func (c *Client) Put(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPut, path, "application/json", b, out)
}

// do makes one request. An answer of 429 or 5xx, or no answer, is retryable; 403 is access denied; any other
// failure is a *StatusError as it is (terminal unless the caller says otherwise).
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Server+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return engine.Retryable(fmt.Errorf("%s %s: %w", method, c.Server+path, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return engine.Retryable(fmt.Errorf("%s %s: reading the answer: %w", method, c.Server+path, err))
	}
	if resp.StatusCode/100 == 2 {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: the answer does not decode: %w", method, c.Server+path, err)
		}
		return nil
	}
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &st)
	if st.Message == "" {
		st.Message = strings.TrimSpace(string(data[:min(len(data), 512)]))
	}
	se := &StatusError{Method: method, Path: strings.SplitN(path, "?", 2)[0], Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return engine.Retryable(se)
	case resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %w", engine.ErrAccessDenied, se)
	}
	return se
}
