package nodeup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"kubeup.dev/kubeup/cloudup/statestore"
	"kubeup.dev/kubeup/model"
)

// ConfigError is a problem with the node configuration or with how it is named: missing, malformed, not matching
// its sha256, an unknown field, a --conf that is not a path or a state-store URL. Nothing on the node was
// changed, and trying again does not help: nodeup never retries it.
type ConfigError struct {
	Err error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// whereWritten is the fix for a configuration that is missing or damaged.
const whereWritten = "`kubeup update cluster --yes` writes it, with its .sha256 beside it, to <state store>/<cluster>/nodeup/<instance group>"

// confSource is where the node configuration is read from: a file on this machine, or an object in a state store.
type confSource struct {
	// raw is --conf as given; name is how errors name the configuration (the absolute path, or the URL).
	raw, name string
	// file is the absolute path of a local configuration; empty for a state store.
	file string
	// storeURL and object locate the configuration in a state store (s3://, gs://).
	storeURL, object string
}

// parseConf checks --conf: a path (relative to the working directory), file:///abs/path, s3://bucket/key or
// gs://bucket/key.
func parseConf(raw string) (*confSource, error) {
	const forms = "a path, file:///abs/path, s3://bucket/key or gs://bucket/key"
	if raw == "" {
		return nil, configErrorf("--conf is required: the node configuration, %s (%s)", forms, whereWritten)
	}
	src := &confSource{raw: raw}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, configErrorf("--conf %q: %w", raw, err)
		}
		src.file, src.name = abs, abs
		return src, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, configErrorf("--conf %q: not %s: %w", raw, forms, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, configErrorf("--conf %q: unexpected user, query or fragment: want %s", raw, forms)
	}
	switch scheme {
	case "file":
		if (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
			return nil, configErrorf("--conf %q: a file URL names an absolute path: file:///abs/path", raw)
		}
		src.file = filepath.Clean(filepath.FromSlash(u.Path))
		src.name = src.file
		return src, nil
	case "s3", "gs":
		key := strings.Trim(u.Path, "/")
		if u.Host == "" || key == "" {
			return nil, configErrorf("--conf %q: want %s://bucket/key, such as %s://bucket/%s", raw, scheme, scheme, model.NodeConfigPath("CLUSTER", "GROUP"))
		}
		dir, base := path.Split(key)
		src.storeURL = scheme + "://" + u.Host + "/" + strings.TrimSuffix(dir, "/")
		src.storeURL = strings.TrimSuffix(src.storeURL, "/")
		src.object = base
		src.name = scheme + "://" + u.Host + "/" + key
		return src, nil
	}
	return nil, configErrorf("--conf %q: unsupported scheme %q: want %s", raw, scheme, forms)
}

// load reads the configuration and its sha256, verifies and decodes it. A missing, damaged or undecodable
// configuration is a *ConfigError; a failure to reach a state store (network, permissions) is not, and is worth
// another try.
func (src *confSource) load(ctx context.Context) (*model.NodeConfig, error) {
	data, sum, err := src.read(ctx)
	if err != nil {
		return nil, err
	}
	nc, err := model.DecodeNodeConfig(src.name, data, string(sum))
	if err != nil {
		if sha256Hex(data) == strings.ToLower(strings.TrimSpace(string(sum))) {
			// The file is the one kubeup wrote (its sha256 matches), but this nodeup cannot read it.
			err = fmt.Errorf("%w\nThis nodeup cannot read the configuration: use the nodeup of the same version as the kubeup "+
				"that wrote it, or write it again with `kubeup update cluster --yes`", err)
		}
		return nil, &ConfigError{Err: err}
	}
	return nc, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// read returns the configuration and the contents of its .sha256.
func (src *confSource) read(ctx context.Context) (data, sum []byte, err error) {
	if src.file != "" {
		if data, err = os.ReadFile(src.file); err != nil {
			return nil, nil, src.readError(src.file, "", err)
		}
		if sum, err = os.ReadFile(src.file + ".sha256"); err != nil {
			return nil, nil, src.readError(src.file, src.file+".sha256", err)
		}
		return data, sum, nil
	}
	store, err := statestore.Open(ctx, src.storeURL)
	if err != nil {
		return nil, nil, &ConfigError{Err: fmt.Errorf("--conf %q: %w", src.raw, err)}
	}
	if data, err = store.ReadFile(ctx, src.object); err != nil {
		return nil, nil, src.readError(src.name, "", err)
	}
	if sum, err = store.ReadFile(ctx, src.object+".sha256"); err != nil {
		return nil, nil, src.readError(src.name, src.name+".sha256", err)
	}
	return data, sum, nil
}

// readError explains a failed read of the configuration (shaFile empty) or of its sha256 file.
func (src *confSource) readError(conf, shaFile string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) && shaFile == "":
		return configErrorf("node configuration %s does not exist: check --conf; %s", conf, whereWritten)
	case errors.Is(err, fs.ErrNotExist):
		return configErrorf("node configuration %s: its sha256 %s does not exist, and nodeup runs no configuration it cannot verify: "+
			"write both again with `kubeup update cluster --yes`", conf, shaFile)
	case src.file != "":
		// A local file that cannot be read (a directory, no permission) does not fix itself.
		return configErrorf("reading the node configuration: %w: check --conf", err)
	}
	return fmt.Errorf("reading the node configuration: %w", err)
}

// nodePath is where the node rooted at root sees the local configuration, for the unit that runs nodeup at boot.
func (src *confSource) nodePath(root string) (string, error) {
	if src.file == "" {
		return src.name, nil
	}
	if root == "/" {
		return src.file, nil
	}
	rel, err := filepath.Rel(root, src.file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", configErrorf("--install-systemd-unit: the unit runs nodeup on the node rooted at %s, which cannot see "+
			"--conf %s: put the configuration under the root, or name it with an s3:// or gs:// URL", root, src.file)
	}
	return "/" + filepath.ToSlash(rel), nil
}
