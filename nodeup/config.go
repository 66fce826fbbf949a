package nodeup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// ConfigError is a problem with the node configuration or with how it is named: missing, malformed, invalid, an
// unknown field, not matching its sha256 after Options.ConfigWait, a --conf that is not a path or a state-store
// URL. Nothing on the node was changed, and trying again does not help: nodeup never retries it.
type ConfigError struct {
	Err error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// whereWritten is the fix for a configuration that is missing or damaged.
const whereWritten = "`kubeup update cluster --yes` writes it to <state store>/<cluster>/nodeup/<instance group>"

// confSource is where the node configuration is read from: a file on this machine, or an object in a state store.
type confSource struct {
	// raw is --conf as given; name is how errors name the configuration (the absolute path, or the URL).
	raw, name string
	// file is the absolute path of a local configuration; empty for a state store.
	file string
	// storeURL and object locate the configuration in a state store (s3://, gs://).
	storeURL, object string

	// store is the state store once opened: its client (credentials, the AWS configuration) is set up once.
	store statestore.Store
	// last is the stored object nc was decoded from: the same bytes read again are not decoded again.
	last []byte
	nc   *model.NodeConfig
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

// LoadConfig reads the node configuration conf names (a path, file:///abs/path, s3:// or gs:// URL), verifies it
// against the sha256 on its first line (reading again for up to o.ConfigWait a copy that does not match yet),
// decodes and validates it: what nodeup does before it changes anything. protokube reads its configuration with
// it, so that both read the same object with the same checks. Of o, only ConfSHA256, Err, Logger, ConfigWait and
// ConfigPollInterval are used.
func LoadConfig(ctx context.Context, conf string, o Options) (*model.NodeConfig, error) {
	o.defaults()
	src, err := parseConf(conf)
	if err != nil {
		return nil, err
	}
	if err := o.checkConfSHA256(); err != nil {
		return nil, err
	}
	return src.load(ctx, &o)
}

// ConfigReader reads one node configuration again and again, with LoadConfig's checks, for a process that reads it
// periodically (protokube, every round): the state store's client is set up on the first read and kept, and the
// configuration is decoded (sha256 checked, validated) only when the stored object's bytes are not those it last
// decoded. Load then returns the same *model.NodeConfig, which callers must not modify.
type ConfigReader struct {
	src *confSource
	o   Options
}

// NewConfigReader checks conf and o.ConfSHA256 as LoadConfig does; it reads nothing yet.
func NewConfigReader(conf string, o Options) (*ConfigReader, error) {
	o.defaults()
	src, err := parseConf(conf)
	if err != nil {
		return nil, err
	}
	if err := o.checkConfSHA256(); err != nil {
		return nil, err
	}
	return &ConfigReader{src: src, o: o}, nil
}

// Load reads the configuration again, as LoadConfig.
func (r *ConfigReader) Load(ctx context.Context) (*model.NodeConfig, error) {
	return r.src.load(ctx, &r.o)
}

// load reads the configuration, verifies it against the sha256 on its first line, decodes and validates it. A
// configuration whose content does not match its sha256 (a copy still being written, a truncated or damaged one)
// is read again every o.ConfigPollInterval for up to o.ConfigWait, then refused. A missing, damaged, undecodable
// or invalid configuration is a *ConfigError; a failure to reach a state store (network, permissions) is not,
// and is worth another try.
func (src *confSource) load(ctx context.Context, o *Options) (*model.NodeConfig, error) {
	var deadline time.Time
	for {
		data, err := src.read(ctx)
		if err != nil {
			return nil, err
		}
		if src.nc != nil && bytes.Equal(data, src.last) {
			return src.nc, nil // decoded, checked and pinned already
		}
		nc, err := model.DecodeNodeConfigObject(src.name, data, src.beside(ctx))
		var sumErr *model.NodeConfigSumError
		switch {
		case err == nil:
			if err := o.pinned(src, data); err != nil {
				return nil, err
			}
			src.last, src.nc = data, nc
			return nc, nil
		case errors.As(err, new(*storeReadError)):
			return nil, err
		case !errors.As(err, &sumErr):
			// The object is whole (or not one of ours at all): reading it again will not help.
			return nil, &ConfigError{Err: fmt.Errorf("%w\nThis nodeup cannot use the configuration: write it again with `kubeup update cluster --yes`, "+
				"and run the nodeup of the same version as the kubeup that wrote it", err)}
		case deadline.IsZero():
			deadline = time.Now().Add(o.ConfigWait)
			what := "content does not match its sha256 (a copy still being written?)"
			if sumErr.PinnedBy != "" {
				what = "its role's configuration " + sumErr.Source + " is not the one it pins (one of the two still being written?)"
			}
			fmt.Fprintf(o.Err, "nodeup: node configuration %s: %s: waiting up to %s for a complete one\n",
				src.name, what, shortDuration(o.ConfigWait))
		case !time.Now().Before(deadline):
			return nil, &ConfigError{Err: fmt.Errorf("node configuration %w; still so after waiting %s: it is damaged or was changed after kubeup wrote it. "+
				"Write it again with `kubeup update cluster --yes`; do not edit its first line", sumErr, shortDuration(o.ConfigWait))}
		}
		o.Logger.Debug("reading the node configuration again", "conf", src.name, "until", deadline, "reason", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a complete node configuration: %w (%w)", context.Cause(ctx), err)
		case <-time.After(o.ConfigPollInterval):
		}
	}
}

// checkConfSHA256 checks --conf-sha256: empty, or a sha256 in hex (taken in either case).
func (o *Options) checkConfSHA256() error {
	if o.ConfSHA256 == "" {
		return nil
	}
	sum := strings.ToLower(strings.TrimSpace(o.ConfSHA256))
	if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return configErrorf("--conf-sha256 %q: want the sha256 of the node configuration, 64 hex digits (the first line of the stored object: # sha256:<hex>)", o.ConfSHA256)
	}
	o.ConfSHA256 = sum
	return nil
}

// pinned refuses a whole, verified configuration whose sha256 is not o.ConfSHA256 (when set): the machine was
// launched for another one.
func (o *Options) pinned(src *confSource, data []byte) error {
	if o.ConfSHA256 == "" {
		return nil
	}
	sum, err := model.NodeConfigObjectSHA256(src.name, data)
	if err != nil {
		return &ConfigError{Err: err}
	}
	if sum == o.ConfSHA256 {
		return nil
	}
	return configErrorf("node configuration %s is %s (the sha256 on its first line), but this machine was launched for %s (--conf-sha256): "+
		"the configuration was written after the machine's launch template, whose user data names the configuration it was made with. "+
		"Nothing was changed. Run `kubeup update cluster --yes` (it writes the group's launch template after its configuration), "+
		"then replace this machine: roll the instance group", src.name, sum, o.ConfSHA256)
}

// shortDuration prints 2m rather than 2m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// read returns the stored object: the configuration with its sha256 on the first line.
func (src *confSource) read(ctx context.Context) ([]byte, error) {
	if src.file != "" {
		data, err := os.ReadFile(src.file)
		if err != nil {
			return nil, src.readError(err)
		}
		return data, nil
	}
	if src.store == nil {
		store, err := statestore.Open(ctx, src.storeURL)
		if err != nil && engine.ClassOf(err) == engine.ClassRetryable {
			// Not the URL: the machine's credentials or configuration, which may be there on the next try (the
			// metadata server not answering yet at boot). Nothing is kept: the next read opens the store again.
			return nil, fmt.Errorf("--conf %q: %w", src.raw, err)
		}
		if err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("--conf %q: %w", src.raw, err)}
		}
		src.store = store
	}
	data, err := src.store.ReadFile(ctx, src.object)
	if err != nil {
		return nil, src.readError(err)
	}
	return data, nil
}

// beside reads an object in the configuration's directory (its role's configuration: model.ReadBeside), from
// the same store or the same directory on this machine. A failure to reach a state store is worth another try
// (not a *ConfigError); a missing object wraps fs.ErrNotExist.
func (src *confSource) beside(ctx context.Context) model.ReadBeside {
	return func(name string) (string, []byte, error) {
		if src.file != "" {
			p := filepath.Join(filepath.Dir(src.file), name)
			data, err := os.ReadFile(p)
			return p, data, err
		}
		where := src.name[:strings.LastIndex(src.name, "/")+1] + name
		data, err := src.store.ReadFile(ctx, name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			err = &storeReadError{err}
		}
		return where, data, err
	}
}

// storeReadError is a failed read of an object beside the configuration in a state store (network,
// permissions): worth another try, as a failed read of the configuration is.
type storeReadError struct{ err error }

func (e *storeReadError) Error() string { return e.err.Error() }
func (e *storeReadError) Unwrap() error { return e.err }

// readError explains a failed read of the configuration.
func (src *confSource) readError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return configErrorf("node configuration %s does not exist: check --conf; %s", src.name, whereWritten)
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
