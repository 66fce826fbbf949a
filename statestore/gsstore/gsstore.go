package gsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/metadata"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	storage "google.golang.org/api/storage/v1"

	"kubeup.dev/kubeup/internal/errclass"
	"kubeup.dev/kubeup/statestore"
)

func init() {
	statestore.RegisterScheme("gs", func(ctx context.Context, b statestore.Bucket) (statestore.Store, error) { return open(ctx, b) })
}

// EnvStorageEmulatorHost names the environment variable that points the gs:// store at an emulator
// (host:port or http://host:port), without authentication: the variable the Google Cloud client libraries use.
const EnvStorageEmulatorHost = "STORAGE_EMULATOR_HOST"

// store keeps each object at bucket/prefix/path. The object's generation number is the generation.
type store struct {
	svc *storage.Service
	statestore.Bucket
	pageSize int64 // for objects.list; 0 lets GCS choose (1000). Tests make it small.
}

var _ statestore.Store = (*store)(nil)

// open builds the client with the application default credentials, or for the emulator named by
// STORAGE_EMULATOR_HOST. A failure to find credentials is errclass.Retryable: at boot the metadata server may not
// answer yet.
func open(ctx context.Context, b statestore.Bucket) (*store, error) {
	var opts []option.ClientOption
	if host := os.Getenv(EnvStorageEmulatorHost); host != "" {
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(host, "/")+"/storage/v1/"), option.WithoutAuthentication())
	} else if !adcFile() {
		// No credentials file: the machine's service account, from the metadata server. The client libraries
		// decide once per process whether they run on GCE, by asking the metadata server: a blip at boot made
		// that "no" for the life of the process, and every retry failed to find credentials. Asked here, each
		// time, a store opened again once the server answers works.
		if _, err := metadata.NewClient(nil).ProjectIDWithContext(ctx); err != nil {
			return nil, errclass.Retryable(fmt.Errorf("state store %s: no credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, gcloud's application "+
				"default credentials are not there, and the metadata server does not answer (%w): on GCE, try again once it does", b.URL(), err))
		}
		opts = append(opts, option.WithTokenSource(google.ComputeTokenSource("", storage.DevstorageFullControlScope)))
	}
	svc, err := storage.NewService(ctx, opts...)
	if err != nil {
		return nil, errclass.Retryable(fmt.Errorf("state store %s: creating the storage client: %w", b.URL(), err))
	}
	return &store{svc: svc, Bucket: b}, nil
}

// adcFile says whether the application default credentials are in a file: GOOGLE_APPLICATION_CREDENTIALS, or
// gcloud's (gcloud auth application-default login), which the client libraries read before they ask the
// metadata server.
func adcFile() bool {
	if os.Getenv("GOOGLE_APPLICATION_CREDENTIALS") != "" {
		return true
	}
	dir := os.Getenv("CLOUDSDK_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		dir = filepath.Join(home, ".config", "gcloud")
	}
	_, err := os.Stat(filepath.Join(dir, "application_default_credentials.json"))
	return err == nil
}

func (s *store) ReadFile(ctx context.Context, p string) ([]byte, error) {
	data, _, err := s.Read(ctx, p)
	return data, err
}

// Read downloads the object in one request: the generation of what it returns is in its X-Goog-Generation
// header.
func (s *store) Read(ctx context.Context, p string) ([]byte, statestore.Generation, error) {
	if err := statestore.CheckPath(p); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.URL(), err)
	}
	res, err := s.svc.Objects.Get(s.Name, s.Key(p)).Context(ctx).Download()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.Object(p), gsError(err))
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.Object(p), errclass.Retryable(err))
	}
	gen := res.Header.Get("X-Goog-Generation")
	if _, err := strconv.ParseInt(gen, 10, 64); err != nil {
		return nil, "", fmt.Errorf("reading %s: the response has no valid X-Goog-Generation header (%q)", s.Object(p), gen)
	}
	return data, statestore.Generation(gen), nil
}

func (s *store) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := statestore.CheckPath(p); err != nil {
		return fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	_, err := s.insert(ctx, p, data, nil)
	return err
}

func (s *store) WriteIf(ctx context.Context, p string, data []byte, ifGen statestore.Generation) (statestore.Generation, error) {
	if err := statestore.CheckPath(p); err != nil {
		return "", fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	var want int64 // 0: the object must not exist
	if ifGen != statestore.Absent {
		n, err := strconv.ParseInt(string(ifGen), 10, 64)
		if err != nil || n <= 0 {
			return "", fmt.Errorf("writing %s: %q is not a generation of a gs:// object", s.Object(p), ifGen)
		}
		want = n
	}
	gen, err := s.insert(ctx, p, data, &want)
	if errors.Is(err, statestore.ErrConflict) {
		return "", statestore.Conflict(s.Object(p), ifGen)
	}
	return gen, err
}

func (s *store) insert(ctx context.Context, p string, data []byte, ifGen *int64) (statestore.Generation, error) {
	call := s.svc.Objects.Insert(s.Name, &storage.Object{Name: s.Key(p)}).Context(ctx).
		// One multipart request, which can be resent because the whole object is buffered: the chunk is larger
		// than the data.
		Media(bytes.NewReader(data), googleapi.ContentType("application/octet-stream"),
			googleapi.ChunkSize(max(googleapi.DefaultUploadChunkSize, len(data)+1))).
		Fields("generation")
	if ifGen != nil {
		call = call.IfGenerationMatch(*ifGen)
	}
	obj, err := call.Do()
	if err != nil {
		err = gsError(err)
		if errors.Is(err, statestore.ErrConflict) {
			return "", err
		}
		return "", fmt.Errorf("writing %s: %w", s.Object(p), err)
	}
	return statestore.Generation(strconv.FormatInt(obj.Generation, 10)), nil
}

func (s *store) Delete(ctx context.Context, p string) error {
	if err := statestore.CheckPath(p); err != nil {
		return fmt.Errorf("deleting %s: %w", s.URL(), err)
	}
	err := gsError(s.svc.Objects.Delete(s.Name, s.Key(p)).Context(ctx).Do())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", s.Object(p), err)
	}
	return nil
}

func (s *store) List(ctx context.Context, prefix string) ([]string, error) {
	keyPrefix, err := s.KeyPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.URL(), err)
	}
	call := s.svc.Objects.List(s.Name).Prefix(keyPrefix).Fields("items(name)", "nextPageToken")
	if s.pageSize > 0 {
		call = call.MaxResults(s.pageSize)
	}
	var paths []string
	err = call.Pages(ctx, func(page *storage.Objects) error {
		for _, obj := range page.Items {
			if p, ok := s.Path(obj.Name); ok {
				paths = append(paths, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.Object(prefix), gsError(err))
	}
	sort.Strings(paths)
	return paths, nil
}

// Check lists at most one object of the store: objects.list answers 404 only for a missing bucket.
func (s *store) Check(ctx context.Context) error {
	_, err := s.svc.Objects.List(s.Name).Prefix(s.Key("")).MaxResults(1).Fields("items(name)").Context(ctx).Do()
	if err == nil {
		return nil
	}
	if err = gsError(err); errors.Is(err, fs.ErrNotExist) {
		return s.NoBucket()
	}
	return fmt.Errorf("state store %s: %w", s.URL(), err)
}

// gsError maps the API's errors to the store's and the engine's: 404 to fs.ErrNotExist, 412 to ErrConflict, 401
// and 403 to errclass.ErrAccessDenied, 429 and 5xx to errclass.Retryable. Anything else is returned as is.
func gsError(err error) error {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return err
	}
	switch {
	case ge.Code == http.StatusNotFound:
		return statestore.ErrNoSuchObject
	case ge.Code == http.StatusPreconditionFailed:
		return statestore.ErrConflict
	case ge.Code == http.StatusUnauthorized || ge.Code == http.StatusForbidden:
		return fmt.Errorf("%w: %w", errclass.ErrAccessDenied, err)
	case ge.Code == http.StatusTooManyRequests || ge.Code >= 500:
		return errclass.Retryable(err)
	}
	return err
}
