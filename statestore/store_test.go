package statestore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The s3 scheme of these tests opens a stub: Open's checks of a bucket URL, and what it hands the scheme, are
// statestore's; the s3 and gs stores are tested in their own packages. gs is left unregistered: a scheme kubeup
// has that this test binary does not link.
func init() {
	RegisterScheme("s3", func(_ context.Context, b Bucket) (Store, error) { return bucketStub{b: b}, nil })
}

// bucketStub is the store the test's s3 scheme opens: only its URL works.
type bucketStub struct {
	Store
	b Bucket
}

func (s bucketStub) URL() string { return s.b.URL() }

func mustOpen(t *testing.T, url string) Store {
	t.Helper()
	st, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	return st
}

func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		url, want, wantErr string
	}{
		{url: "/var/lib/kubeup", want: "file:///var/lib/kubeup"},
		{url: "/var/lib/kubeup/", want: "file:///var/lib/kubeup"},
		{url: "file:///var/lib/../lib/kubeup", want: "file:///var/lib/kubeup"},
		{url: "file://localhost/srv/state", want: "file:///srv/state"},
		{url: "file:///", wantErr: "the root directory / cannot be a state store (listing its clusters would walk the whole filesystem)"},
		{url: "/", wantErr: "cannot be a state store"},
		{url: "file://localhost/srv/..", wantErr: "cannot be a state store"},
		{url: "file:///srv/a b%20c#d", want: "file:///srv/a b%20c#d"}, // taken literally: URL() round-trips
		{url: "s3://bucket", want: "s3://bucket"},
		{url: "s3://bucket/", want: "s3://bucket"},
		{url: "s3://bucket/a/b/", want: "s3://bucket/a/b"},
		{url: "s3://bucket/kubeup", want: "s3://bucket/kubeup"},
		{url: "relative/dir", wantErr: "not a URL nor an absolute path (file:///abs/dir, s3://bucket/prefix)"},
		{url: "file://host/srv", wantErr: "local directory"},
		{url: "file:relative", wantErr: "absolute path"},
		{url: "s3:///prefix", wantErr: "missing bucket"},
		{url: "s3://", wantErr: "missing bucket: s3://bucket/prefix"},
		{url: "s3://bucket/a/../b", wantErr: `contains ".."`},
		{url: "s3://bucket/a//b", wantErr: "empty segment"},
		{url: "s3://bucket/a?region=x", wantErr: "query"},
		{url: "s3:bucket", wantErr: "missing bucket"},
		{url: "ftp://host/x", wantErr: `state store URL "ftp://host/x": unsupported scheme "ftp" (this binary has file, s3)`},
		{url: "gs://bucket/kubeup", wantErr: `state store URL "gs://bucket/kubeup": this binary has no gs store (it has file, s3)`},
		{url: "gs://", wantErr: "this binary has no gs store (it has file, s3)"},
		{url: "", wantErr: "not a URL"},
	} {
		st, err := Open(context.Background(), tc.url)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open(%q) = %v, want an error containing %q", tc.url, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("Open(%q): %v", tc.url, err)
		case st.URL() != tc.want:
			t.Errorf("Open(%q).URL() = %q, want %q", tc.url, st.URL(), tc.want)
		}
	}
}

// TestRegisterSchemeRefuses: registering a scheme twice, file, or a name that is not a URL scheme is a
// programmer's error, caught when the binary starts.
func TestRegisterSchemeRefuses(t *testing.T) {
	open := func(context.Context, Bucket) (Store, error) { return nil, nil }
	for _, tc := range []struct {
		scheme string
		open   func(context.Context, Bucket) (Store, error)
		want   string
	}{
		{"s3", open, `RegisterScheme("s3"): registered twice`},
		{"file", open, `RegisterScheme("file"): file:// is built in`},
		{"", open, "a scheme is lower-case letters"},
		{"S3", open, "a scheme is lower-case letters"},
		{"3s", open, "a scheme is lower-case letters"},
		{"s3+x", open, "a scheme is lower-case letters"},
		{"az", nil, "needs an open function"},
	} {
		got := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			RegisterScheme(tc.scheme, tc.open)
			return ""
		}()
		if !strings.Contains(got, tc.want) {
			t.Errorf("RegisterScheme(%q) panics with %q, want %q", tc.scheme, got, tc.want)
		}
	}
	if got := linkedSchemes(); !slices.Equal(got, []string{"file", "s3"}) {
		t.Errorf("after the refusals, the schemes are %q, want [file s3]", got)
	}
}

func TestDefaultURL(t *testing.T) {
	t.Setenv(EnvStateStore, "s3://bucket/kubeup")
	if got, err := DefaultURL(); err != nil || got != "s3://bucket/kubeup" {
		t.Errorf("with %s set: DefaultURL() = %q, %v", EnvStateStore, got, err)
	}
	t.Setenv(EnvStateStore, "")
	t.Setenv("HOME", "/home/operator")
	if got, err := DefaultURL(); err != nil || got != "file:///home/operator/.kubeup/state" {
		t.Errorf("DefaultURL() = %q, %v; want file:///home/operator/.kubeup/state", got, err)
	}
}
