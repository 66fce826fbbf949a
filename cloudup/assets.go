package cloudup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// MirrorOptions say where `kubeup assets mirror` takes the assets from, and whether it applies.
type MirrorOptions struct {
	// From are local directories searched, in order, for each asset by the base name of its relative path
	// (model.AssetRelPath): kubelet, containerd-2.4.2-linux-amd64.tar.gz, pause.tar, ... An asset found in none
	// is downloaded from its URL.
	From []string
	// Apply copies and records; without it, Mirror only says what it would do.
	Apply bool
	// Out receives the report.
	Out io.Writer
	// HTTPClient downloads (default: a client with a 10-minute timeout).
	HTTPClient *http.Client
}

// mirrored is one asset of the complete spec, as Mirror finds and plans it.
type mirrored struct {
	field  string // spec.assets.kubelet, spec.assets.images.pause
	name   string // kubelet, images/pause
	image  string // the image reference, for an image
	url    string // the complete spec's URL
	sha    string // the complete spec's sha256
	object string // where it goes in the store, relative to the store's root
	dest   string // its URL there

	data    []byte
	from    string // where data came from (a local path or a URL)
	got     string // sha256 of data
	copy    bool   // the store's object is missing or differs
	record  bool   // the stored spec does not name dest and got yet
	missing error  // it could not be read
}

// MirrorAssets copies every asset of the cluster's complete spec into the state store, at
// <cluster>/assets/<relative path>, from a directory of o.From or else from its URL, and records that URL and the
// file's sha256 in the stored spec. An asset whose stored object already has the sha256 the spec records is not
// read again. It refuses, changing nothing, when a file read has another sha256 than the spec records for it
// (naming the asset and both hashes). Without o.Apply it only reports. An asset that cannot be read (not in
// o.From, and its URL unreachable or none) is reported, the others are mirrored, and the error names it.
func (cs *Clusters) MirrorAssets(ctx context.Context, name string, o MirrorOptions) error {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Minute}
	}
	s, err := cs.Get(ctx, name)
	if err != nil {
		return err
	}
	// What was mirrored for another version (kubernetesVersion or kubeup changed since) pins nothing now: it is
	// mirrored again, at its new path, as if it had never been. Without it the spec validates again.
	c, _, err := cs.Complete(&Stored{Cluster: withoutStale(s.Cluster, s.InstanceGroups), InstanceGroups: s.InstanceGroups})
	if err != nil {
		return err
	}
	user := s.Cluster.Spec.Assets
	var list []*mirrored
	for _, n := range model.AssetNames {
		f := c.Spec.Assets.File(n)
		list = append(list, &mirrored{field: "spec.assets." + n, name: n, url: f.URL, sha: f.SHA256})
	}
	for _, n := range slices.Sorted(maps.Keys(c.Spec.Assets.Images)) {
		img := c.Spec.Assets.Images[n]
		list = append(list, &mirrored{field: "spec.assets.images." + n, name: "images/" + n, image: img.Image, url: img.URL, sha: img.SHA256})
	}

	var mismatch []string
	for _, m := range list {
		rel := model.AssetRelPath(&c.Spec, m.name)
		m.object = path.Join(name, "assets", rel)
		m.dest = model.MirrorURL(&c.Spec, m.name)
		if err := cs.readAsset(ctx, m, rel, o); err != nil {
			return err
		}
		if m.missing != nil {
			continue
		}
		if m.sha != "" && m.got != m.sha {
			mismatch = append(mismatch, fmt.Sprintf("%s: %s has sha256 %s, but %s.sha256 is %s", m.field, m.from, m.got, m.field, m.sha))
		}
		m.record = m.url != m.dest || m.sha != m.got || !recorded(user, m)
	}
	if len(mismatch) > 0 {
		return fmt.Errorf("cluster %s: refusing to mirror, nothing was changed: %s. A file that is not the one the spec pins is not copied over it: "+
			"give the right file, or remove the sha256 from the spec (kubeup edit cluster %s) to pin the new one", name, strings.Join(mismatch, "; "), name)
	}
	return cs.applyMirror(ctx, s, list, o)
}

// withoutStale is the stored cluster c without the assets recorded for another version than its complete spec's:
// an image whose reference is not the one the manifests name, a file whose URL is in the cluster's mirror but not
// at its path for this version.
func withoutStale(c *model.Cluster, igs []*model.InstanceGroup) *model.Cluster {
	out := deepCopyCluster(c)
	a := out.Spec.Assets
	if a == nil {
		return out
	}
	full, _ := model.Complete(c, igs)
	refs := model.ImageRefs(&full.Spec)
	for n, img := range a.Images {
		if img != nil && img.Image != "" && img.Image != refs[n] {
			delete(a.Images, n)
		}
	}
	mirror := strings.TrimSuffix(full.Spec.ConfigBase, "/") + "/assets/"
	for _, n := range model.AssetNames {
		if f := a.File(n); f != nil && strings.HasPrefix(f.URL, mirror) && f.URL != model.MirrorURL(&full.Spec, n) {
			a.SetFile(n, nil)
		}
	}
	return out
}

// readAsset finds m's file: in o.From by base name, else (when the store's object already holds what the spec
// records) nowhere, else at its URL. It sets m.data, m.from, m.got and m.copy, or m.missing.
func (cs *Clusters) readAsset(ctx context.Context, m *mirrored, rel string, o MirrorOptions) error {
	base := path.Base(rel)
	for _, dir := range o.From {
		p := filepath.Join(dir, base)
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("--from %s: %w", dir, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("--from %s: %s is not a regular file", dir, p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("--from %s: %w", dir, err)
		}
		m.data, m.from = data, p
		break
	}
	stored, err := cs.Store.ReadFile(ctx, m.object)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		stored = nil
	case err != nil:
		return fmt.Errorf("reading %s: %w", m.dest, err)
	}
	if m.data == nil && stored != nil && m.sha != "" && sumHex(stored) == m.sha {
		m.data, m.from = stored, m.dest // already mirrored: nothing to read
	}
	if m.data == nil {
		if m.url == "" {
			m.missing = fmt.Errorf("no file %s in --from, and %s.url is empty (upstream publishes no image archives): give --from DIR holding it", base, m.field)
			return nil
		}
		data, err := fetch(ctx, o.HTTPClient, m.url)
		if err != nil {
			m.missing = fmt.Errorf("no file %s in --from, and %w", base, err)
			return nil
		}
		m.data, m.from = data, m.url
	}
	m.got = sumHex(m.data)
	m.copy = stored == nil || sumHex(stored) != m.got
	return nil
}

// recorded reports whether the stored spec names m's mirror URL and sha256 itself (not through a default).
func recorded(user *model.AssetsSpec, m *mirrored) bool {
	if user == nil {
		return false
	}
	if short, ok := strings.CutPrefix(m.name, "images/"); ok {
		img := user.Images[short]
		return img != nil && img.URL == m.dest && img.SHA256 == m.got && img.Image == m.image
	}
	f := user.File(m.name)
	return f != nil && f.URL == m.dest && f.SHA256 == m.got
}

// applyMirror reports the plan and, with o.Apply, copies and records it.
func (cs *Clusters) applyMirror(ctx context.Context, s *Stored, list []*mirrored, o MirrorOptions) error {
	name := s.Cluster.Metadata.Name
	var b strings.Builder
	var missing []string
	changes := 0
	for _, m := range list {
		switch {
		case m.missing != nil:
			missing = append(missing, m.field+": "+m.missing.Error())
			fmt.Fprintf(&b, "  missing  %s: %v\n", m.field, m.missing)
		case m.copy || m.record:
			changes++
			what := "record"
			if m.copy {
				what = "copy"
			}
			fmt.Fprintf(&b, "  %-8s %s: %s -> %s (sha256 %s)\n", what, m.field, m.from, m.dest, m.got)
		}
	}
	switch {
	case changes == 0 && len(missing) == 0:
		fmt.Fprintf(o.Out, "Every asset of cluster %s is in the mirror, and recorded: no changes\n", name)
		return nil
	case !o.Apply:
		fmt.Fprintf(o.Out, "Will mirror the assets of cluster %s (%d changes):\n%sRun with --yes to copy them and record their sha256 in the spec\n", name, changes, b.String())
	default:
		fmt.Fprintf(o.Out, "Mirroring the assets of cluster %s (%d changes):\n%s", name, changes, b.String())
		if err := cs.writeMirror(ctx, s, list); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cluster %s: %d assets could not be read: %s", name, len(missing), strings.Join(missing, "; "))
	}
	return nil
}

// writeMirror writes the objects to copy (each atomically, through the state store) and then, in one write
// conditional on the generation read, the stored spec with every mirrored asset's URL and sha256.
func (cs *Clusters) writeMirror(ctx context.Context, s *Stored, list []*mirrored) error {
	c := deepCopyCluster(s.Cluster)
	if c.Spec.Assets == nil {
		c.Spec.Assets = &model.AssetsSpec{}
	}
	a := c.Spec.Assets
	write := false
	for _, m := range list {
		if m.missing != nil {
			continue
		}
		if m.copy {
			if err := cs.Store.WriteFile(ctx, m.object, m.data); err != nil {
				return fmt.Errorf("copying %s to %s: %w", m.field, m.dest, err)
			}
		}
		if !m.record {
			continue
		}
		write = true
		if short, ok := strings.CutPrefix(m.name, "images/"); ok {
			if a.Images == nil {
				a.Images = map[string]*model.ImageAssetSpec{}
			}
			a.Images[short] = &model.ImageAssetSpec{Image: m.image, URL: m.dest, SHA256: m.got}
			continue
		}
		a.SetFile(m.name, &model.AssetSpec{URL: m.dest, SHA256: m.got})
	}
	if !write {
		return nil
	}
	source := fmt.Sprintf("cluster %s in %s", c.Metadata.Name, cs.Store.URL())
	_, _, err := cs.writeOver(ctx, source, s, c, s.InstanceGroups)
	return err
}

// deepCopyCluster copies a cluster deeply enough for writeMirror to change its spec.assets: the rest is shared,
// and not changed.
func deepCopyCluster(c *model.Cluster) *model.Cluster {
	out := *c
	if c.Spec.Assets != nil {
		a := *c.Spec.Assets
		a.Images = make(map[string]*model.ImageAssetSpec, len(c.Spec.Assets.Images))
		for k, v := range c.Spec.Assets.Images {
			a.Images[k] = v
		}
		out.Spec.Assets = &a
	}
	return &out
}

// fetch reads rawURL whole: http(s), or a state store's (file://, s3://, gs://).
func fetch(ctx context.Context, client *http.Client, rawURL string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("downloading %s: %w", rawURL, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("downloading %s: %s", rawURL, resp.Status)
		}
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("downloading %s: %w", rawURL, err)
		}
		return data, nil
	}
	dir, base := path.Split(strings.TrimSuffix(rawURL, "/"))
	st, err := statestore.Open(ctx, strings.TrimSuffix(dir, "/"))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rawURL, err)
	}
	data, err := st.ReadFile(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rawURL, err)
	}
	return data, nil
}

func sumHex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}
