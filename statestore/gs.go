package statestore

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
)

// EnvStorageEmulatorHost names the environment variable that points the gs:// store at an emulator
// (host:port or http://host:port), without authentication: the variable the Google Cloud client libraries use.
const EnvStorageEmulatorHost = "STORAGE_EMULATOR_HOST"

// gsStore keeps each object at bucket/prefix/path. The object's generation number is the generation.
type gsStore struct {
	svc *storage.Service
	bucketRoot
	pageSize int64 // for objects.list; 0 lets GCS choose (1000). Tests make it small.
}

var _ Store = (*gsStore)(nil)

// newGSStore builds the client with the application default credentials, or for the emulator named by
// STORAGE_EMULATOR_HOST. A failure to find credentials is errclass.Retryable: at boot the metadata server may not
// answer yet.
func newGSStore(ctx context.Context, bucket, prefix string) (*gsStore, error) {
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
				"default credentials are not there, and the metadata server does not answer (%w): on GCE, try again once it does", location("gs://"+bucket, prefix), err))
		}
		opts = append(opts, option.WithTokenSource(google.ComputeTokenSource("", storage.DevstorageFullControlScope)))
	}
	svc, err := storage.NewService(ctx, opts...)
	if err != nil {
		return nil, errclass.Retryable(fmt.Errorf("state store %s: creating the storage client: %w", location("gs://"+bucket, prefix), err))
	}
	return &gsStore{svc: svc, bucketRoot: bucketRoot{scheme: "gs", bucket: bucket, prefix: prefix}}, nil
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

func (s *gsStore) ReadFile(ctx context.Context, p string) ([]byte, error) {
	data, _, err := s.Read(ctx, p)
	return data, err
}

// Read downloads the object in one request: the generation of what it returns is in its X-Goog-Generation
// header.
func (s *gsStore) Read(ctx context.Context, p string) ([]byte, Generation, error) {
	if err := checkPath(p); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.URL(), err)
	}
	res, err := s.svc.Objects.Get(s.bucket, s.key(p)).Context(ctx).Download()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.loc(p), gsError(err))
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", s.loc(p), errclass.Retryable(err))
	}
	gen := res.Header.Get("X-Goog-Generation")
	if _, err := strconv.ParseInt(gen, 10, 64); err != nil {
		return nil, "", fmt.Errorf("reading %s: the response has no valid X-Goog-Generation header (%q)", s.loc(p), gen)
	}
	return data, Generation(gen), nil
}

func (s *gsStore) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	_, err := s.insert(ctx, p, data, nil)
	return err
}

func (s *gsStore) WriteIf(ctx context.Context, p string, data []byte, ifGen Generation) (Generation, error) {
	if err := checkPath(p); err != nil {
		return "", fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	var want int64 // 0: the object must not exist
	if ifGen != Absent {
		n, err := strconv.ParseInt(string(ifGen), 10, 64)
		if err != nil || n <= 0 {
			return "", fmt.Errorf("writing %s: %q is not a generation of a gs:// object", s.loc(p), ifGen)
		}
		want = n
	}
	gen, err := s.insert(ctx, p, data, &want)
	if errors.Is(err, ErrConflict) {
		return "", conflict(s.loc(p), ifGen)
	}
	return gen, err
}

func (s *gsStore) insert(ctx context.Context, p string, data []byte, ifGen *int64) (Generation, error) {
	call := s.svc.Objects.Insert(s.bucket, &storage.Object{Name: s.key(p)}).Context(ctx).
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
		if errors.Is(err, ErrConflict) {
			return "", err
		}
		return "", fmt.Errorf("writing %s: %w", s.loc(p), err)
	}
	return Generation(strconv.FormatInt(obj.Generation, 10)), nil
}

func (s *gsStore) Delete(ctx context.Context, p string) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("deleting %s: %w", s.URL(), err)
	}
	err := gsError(s.svc.Objects.Delete(s.bucket, s.key(p)).Context(ctx).Do())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", s.loc(p), err)
	}
	return nil
}

func (s *gsStore) List(ctx context.Context, prefix string) ([]string, error) {
	root, keyPrefix, err := bucketKeyPrefix(s.prefix, prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.URL(), err)
	}
	call := s.svc.Objects.List(s.bucket).Prefix(keyPrefix).Fields("items(name)", "nextPageToken")
	if s.pageSize > 0 {
		call = call.MaxResults(s.pageSize)
	}
	var paths []string
	err = call.Pages(ctx, func(page *storage.Objects) error {
		for _, obj := range page.Items {
			rel, ok := strings.CutPrefix(obj.Name, root)
			if !ok || checkPath(rel) != nil {
				continue // not an object this store could have written
			}
			paths = append(paths, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.loc(prefix), gsError(err))
	}
	sort.Strings(paths)
	return paths, nil
}

// Check lists at most one object of the store: objects.list answers 404 only for a missing bucket.
func (s *gsStore) Check(ctx context.Context) error {
	_, err := s.svc.Objects.List(s.bucket).Prefix(s.key("")).MaxResults(1).Fields("items(name)").Context(ctx).Do()
	if err == nil {
		return nil
	}
	if err = gsError(err); errors.Is(err, fs.ErrNotExist) {
		return noStore(s.URL(), "bucket "+s.bucket)
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
		return errNoSuchObject
	case ge.Code == http.StatusPreconditionFailed:
		return ErrConflict
	case ge.Code == http.StatusUnauthorized || ge.Code == http.StatusForbidden:
		return fmt.Errorf("%w: %w", errclass.ErrAccessDenied, err)
	case ge.Code == http.StatusTooManyRequests || ge.Code >= 500:
		return errclass.Retryable(err)
	}
	return err
}
