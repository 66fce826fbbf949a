package nodeup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/statestore"
)

// assetStores reads the assets whose URL is a state store's (file://, s3://, gs://), as nodeup reads its
// configuration: through the statestore package, with the machine's credentials. Each store's client is set up
// once. A failed read (network, permissions, credentials not there yet) is worth another try; a missing object
// is not.
type assetStores struct {
	mu     sync.Mutex
	stores map[string]statestore.Store
}

// mirrorFix ends the error of an asset that is not where its URL says.
const mirrorFix = "copy it there, or run `kubeup assets mirror CLUSTER --yes`, which copies every asset into the state store and records its URL and sha256"

// open returns the object rawURL names. A file:// object is streamed; an s3:// or gs:// one is read whole.
func (s *assetStores) open(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, engine.Terminal(err)
	}
	switch u.Scheme {
	case "file":
		f, err := os.Open(filepath.FromSlash(u.Path))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, engine.Terminal(fmt.Errorf("%s does not exist: %s", u.Path, mirrorFix))
		}
		if err != nil {
			return nil, engine.Retryable(err)
		}
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			f.Close()
			return nil, engine.Terminal(fmt.Errorf("%s is not a regular file", u.Path))
		}
		return f, nil
	case "s3", "gs":
		dir, base := path.Split(strings.TrimPrefix(u.Path, "/"))
		store, err := s.store(ctx, u.Scheme+"://"+u.Host+"/"+strings.TrimSuffix(dir, "/"))
		if err != nil {
			return nil, err
		}
		data, err := store.ReadFile(ctx, base)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, engine.Terminal(fmt.Errorf("no such object: %s", mirrorFix))
		}
		if err != nil {
			return nil, engine.Retryable(err)
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return nil, engine.Terminal(fmt.Errorf("unsupported scheme %q: want http, https, file, s3 or gs", u.Scheme))
}

// store opens the state store at storeURL once.
func (s *assetStores) store(ctx context.Context, storeURL string) (statestore.Store, error) {
	storeURL = strings.TrimSuffix(storeURL, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stores[storeURL]; ok {
		return st, nil
	}
	st, err := statestore.Open(ctx, storeURL)
	if err != nil {
		if engine.ClassOf(err) == engine.ClassRetryable {
			return nil, err
		}
		return nil, engine.Terminal(err)
	}
	if s.stores == nil {
		s.stores = map[string]statestore.Store{}
	}
	s.stores[storeURL] = st
	return st, nil
}
