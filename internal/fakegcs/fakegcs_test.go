package fakegcs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	storage "google.golang.org/api/storage/v1"

	"kubeup.dev/kubeup/internal/fakegcs"
)

// newClient starts the fake and returns the real client pointed at it.
func newClient(t *testing.T, buckets ...string) (*fakegcs.Server, *httptest.Server, *storage.Service) {
	t.Helper()
	fake := fakegcs.New(buckets...)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	svc, err := storage.NewService(context.Background(),
		option.WithEndpoint(srv.URL+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return fake, srv, svc
}

func insert(t *testing.T, svc *storage.Service, bucket, name, data string, opts ...googleapi.CallOption) (*storage.Object, error) {
	t.Helper()
	return svc.Objects.Insert(bucket, &storage.Object{Name: name}).
		Media(strings.NewReader(data), googleapi.ContentType("text/plain")).Do(opts...)
}

func errCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

func TestInsertGetDownload(t *testing.T) {
	fake, _, svc := newClient(t, "b")
	obj, err := insert(t, svc, "b", "demo/config", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Name != "demo/config" || obj.Generation <= 0 || obj.Size != 5 || obj.ContentType != "text/plain" {
		t.Errorf("insert returned %+v", obj)
	}
	got, err := svc.Objects.Get("b", "demo/config").Do()
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != obj.Generation || got.Bucket != "b" || got.Md5Hash != "XUFAKrxLKna5cZ2REBfFkg==" {
		t.Errorf("get returned %+v, want generation %d", got, obj.Generation)
	}
	res, err := svc.Objects.Get("b", "demo/config").Download()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if string(body) != "hello" {
		t.Errorf("download = %q, want %q", body, "hello")
	}
	if g := res.Header.Get("X-Goog-Generation"); g != "1" {
		t.Errorf("X-Goog-Generation = %q, want 1", g)
	}
	if data, gen, ok := fake.Object("b", "demo/config"); !ok || string(data) != "hello" || gen != obj.Generation {
		t.Errorf("Object() = %q, %d, %v", data, gen, ok)
	}
}

// TestMediaUpload sends uploadType=media as a plain HTTP client would (the Go client always sends multipart).
func TestMediaUpload(t *testing.T) {
	fake, srv, _ := newClient(t, "b")
	u := srv.URL + "/upload/storage/v1/b/b/o?uploadType=media&name=" + url.QueryEscape("a/b c")
	res, err := http.Post(u, "application/yaml", strings.NewReader("kind: Cluster\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var obj storage.Object
	if err := json.NewDecoder(res.Body).Decode(&obj); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, decoding: %v", res.StatusCode, err)
	}
	if obj.Name != "a/b c" || obj.ContentType != "application/yaml" {
		t.Errorf("got %+v", obj)
	}
	if data, _, _ := fake.Object("b", "a/b c"); string(data) != "kind: Cluster\n" {
		t.Errorf("stored %q", data)
	}
}

func TestGenerationPreconditions(t *testing.T) {
	_, _, svc := newClient(t, "b")
	first, err := insert(t, svc, "b", "x", "1", googleapi.QueryParameter("ifGenerationMatch", "0"))
	if err != nil {
		t.Fatalf("create with ifGenerationMatch=0: %v", err)
	}
	if _, err := svc.Objects.Insert("b", &storage.Object{Name: "x"}).IfGenerationMatch(0).
		Media(strings.NewReader("2")).Do(); errCode(err) != http.StatusPreconditionFailed {
		t.Errorf("second create with ifGenerationMatch=0: err = %v, want 412", err)
	}
	second, err := svc.Objects.Insert("b", &storage.Object{Name: "x"}).IfGenerationMatch(first.Generation).
		Media(strings.NewReader("2")).Do()
	if err != nil {
		t.Fatalf("update with the current generation: %v", err)
	}
	if second.Generation <= first.Generation {
		t.Errorf("generation went from %d to %d, want it to increase", first.Generation, second.Generation)
	}
	if _, err := svc.Objects.Insert("b", &storage.Object{Name: "x"}).IfGenerationMatch(first.Generation).
		Media(strings.NewReader("3")).Do(); errCode(err) != http.StatusPreconditionFailed {
		t.Errorf("update with a stale generation: err = %v, want 412", err)
	}
	if err := svc.Objects.Delete("b", "x").IfGenerationMatch(first.Generation).Do(); errCode(err) != http.StatusPreconditionFailed {
		t.Errorf("delete with a stale generation: err = %v, want 412", err)
	}
	if err := svc.Objects.Delete("b", "x").IfGenerationMatch(second.Generation).Do(); err != nil {
		t.Errorf("delete with the current generation: %v", err)
	}
	if err := svc.Objects.Delete("b", "x").Do(); errCode(err) != http.StatusNotFound {
		t.Errorf("delete of an absent object: err = %v, want 404", err)
	}
}

func TestList(t *testing.T) {
	fake, _, svc := newClient(t, "b")
	fake.MaxPageSize = 2
	for _, name := range []string{"p/c", "p/a", "q/z", "p/b/d", "p/e", "pp/x"} {
		if _, err := insert(t, svc, "b", name, name); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	pages := 0
	err := svc.Objects.List("b").Prefix("p/").Pages(context.Background(), func(o *storage.Objects) error {
		pages++
		for _, item := range o.Items {
			got = append(got, item.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"p/a", "p/b/d", "p/c", "p/e"}, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	if pages != 2 {
		t.Errorf("%d pages, want 2 of at most 2 items", pages)
	}
}

func TestErrors(t *testing.T) {
	_, srv, svc := newClient(t, "b")
	_, err := svc.Objects.Get("b", "absent").Do()
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusNotFound || !strings.Contains(ge.Message, "absent") ||
		len(ge.Errors) != 1 || ge.Errors[0].Reason != "notFound" {
		t.Errorf("get absent object: err = %#v, want a 404 googleapi.Error with reason notFound", err)
	}
	if _, err := svc.Objects.List("nobucket").Do(); errCode(err) != http.StatusNotFound {
		t.Errorf("list of a missing bucket: err = %v, want 404", err)
	}
	if _, err := insert(t, svc, "nobucket", "x", "y"); errCode(err) != http.StatusNotFound {
		t.Errorf("insert into a missing bucket: err = %v, want 404", err)
	}

	// The raw body, as a client in another language would see it.
	res, err := http.Get(srv.URL + "/storage/v1/b/b/o/absent")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &body); err != nil || body.Error.Code != 404 || body.Error.Message == "" {
		t.Errorf("error body %s, want {\"error\":{\"code\":404,\"message\":...}}", bytes.TrimSpace(raw))
	}
}

// TestClientSendsMultipart pins down what the Go client sends for a small upload, the path the fake must serve.
func TestClientSendsMultipart(t *testing.T) {
	fake := fakegcs.New("b")
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
			seen = append(seen, r.URL.Path+" "+r.URL.Query().Get("uploadType")+" "+ct)
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	svc, err := storage.NewService(context.Background(), option.WithEndpoint(srv.URL+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := insert(t, svc, "b", "x", "data"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/upload/storage/v1/b/b/o multipart multipart/related"}, seen); diff != "" {
		t.Errorf("uploads (-want +got):\n%s", diff)
	}
}
