package nodetasks

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// ArchiveDir holds, on the node, what each Archive unpacked (<name>.json: the archive's sha256, and each member's
// path and sha256) and, while an Archive is being unpacked, the verified archive itself (<name>.tar.gz).
const ArchiveDir = "/var/lib/kubeup/assets"

// Archive is a gzip'd tar downloaded from a URL and verified against its sha256, of which the named members
// (regular files) are installed, each atomically at its node path. What it unpacked is recorded in
// ArchiveDir/<Name>.json, so that a later run checks the installed files by their hashes without the archive: the
// archive is removed once its members are installed.
type Archive struct {
	// Name names the archive (containerd), the task and its record.
	Name string
	// URL is where the archive is downloaded from, as Asset.URL.
	URL string
	// SHA256 is the hex sha256 of the archive: required. Nothing is unpacked from an archive that does not match.
	SHA256 string
	// Members are the node paths to install, by member name in the archive ("bin/containerd", or "bridge" for
	// a member "./bridge"). Members not named are never written.
	Members map[string]string
	// Mode is the installed files' permission bits (0755 when nil).
	Mode *os.FileMode
	// After orders this archive after other tasks.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*Archive, *Node] = (*Archive)(nil)
	_ engine.Renderer[*Archive, *Node] = (*Archive)(nil)
)

func (a *Archive) Key() engine.Key     { return engine.Key{Type: "Archive", Name: a.Name} }
func (a *Archive) Deps() []engine.Task { return a.After }

// Paths are the node paths the archive writes: its members' and its record's (and its download's, removed).
func (a *Archive) Paths() []string {
	out := slices.Sorted(maps.Values(a.Members))
	return append(out, a.recordPath(), a.downloadPath())
}

func (a *Archive) recordPath() string   { return path.Join(ArchiveDir, a.Name+".json") }
func (a *Archive) downloadPath() string { return path.Join(ArchiveDir, a.Name+".tar.gz") }

func (a *Archive) contentHash(*Node) (string, error) { return a.SHA256, nil }

// archiveRecord is what an Archive unpacked.
type archiveRecord struct {
	SHA256  string                   `json:"sha256"`
	Members map[string]archiveMember `json:"members"`
}

type archiveMember struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

var archiveName = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9_.]*$`)

// Validate checks the name, the hash, the URL, the members' names and paths, and the mode.
func (a *Archive) Validate() error {
	if !archiveName.MatchString(a.Name) {
		return fmt.Errorf("field Name: %q: want letters, digits, '-', '_' and '.'", a.Name)
	}
	if err := checkSHA256(a.SHA256); err != nil {
		return err
	}
	if err := checkAssetURL(a.URL); err != nil {
		return err
	}
	if len(a.Members) == 0 {
		return errors.New("field Members is required: the members to install")
	}
	seen := map[string]string{}
	for _, m := range slices.Sorted(maps.Keys(a.Members)) {
		if memberName(m) != m || m == "." || path.IsAbs(m) || climbs(m) {
			return fmt.Errorf("field Members: %q is not a clean relative member name (such as bin/containerd)", m)
		}
		p := a.Members[m]
		if err := checkNodePath("Members["+m+"]", p); err != nil {
			return err
		}
		if other, ok := seen[p]; ok {
			return fmt.Errorf("field Members: %s and %s are both installed at %s", other, m, p)
		}
		seen[p] = m
	}
	return checkMode("Mode", a.Mode)
}

// climbs reports whether a member name has a ".." element.
func climbs(name string) bool { return slices.Contains(strings.Split(name, "/"), "..") }

// memberName is a tar member's name as Members names it: cleaned, without a leading "./".
func memberName(name string) string { return strings.TrimPrefix(path.Clean(name), "./") }

// Find reads the record of what the archive unpacked, and hashes each installed member. It is nil when there is
// no record. Members holds the members whose installed file is what was unpacked, at the path wanted: a member
// missing, changed or moved shows as a change of Members, and the archive is unpacked again.
func (a *Archive) Find(ctx context.Context, n *Node) (*Archive, error) {
	data, ok, err := n.readNodeFile(a.recordPath())
	if err != nil || !ok {
		return nil, err
	}
	var rec archiveRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		engine.Logger(ctx).Warn("unreadable record of an archive: unpacking it again", "path", a.recordPath(), "error", err)
		return &Archive{Name: a.Name, URL: a.URL}, nil
	}
	actual := &Archive{Name: a.Name, URL: a.URL, SHA256: rec.SHA256, Mode: a.Mode, Members: map[string]string{}}
	for m, p := range a.Members {
		r, ok := rec.Members[m]
		if !ok || r.Path != p {
			continue
		}
		st, ok, err := n.lstatNode(p)
		if err != nil {
			return nil, err
		}
		if !ok || st.typ != TypeFile {
			continue
		}
		sum, err := n.hashNodeFile(p)
		if err != nil {
			return nil, err
		}
		if sum == r.SHA256 {
			actual.Members[m] = p
		}
	}
	return actual, nil
}

func (a *Archive) CheckChanges(actual, expected, changes *Archive) error { return expected.Validate() }

// Render downloads the archive into ArchiveDir (verifying its sha256 as it streams; a file that does not match
// is never renamed into place), checks that every named member is a regular file in it (a link, a device, a
// directory or a name that climbs out with ".." is refused, before anything is installed), installs each named
// member atomically, writes the record, and removes the archive.
func (a *Archive) Render(ctx context.Context, n *Node, actual, expected, changes *Archive) error {
	log := engine.Logger(ctx)
	var size int64
	err := n.writeAtomic(ctx, a.downloadPath(), 0o600, -1, -1, func(w io.Writer) error {
		var err error
		size, err = n.download(ctx, expected.URL, expected.SHA256, w)
		return err
	})
	if err != nil {
		return err
	}
	defer n.removeNodeFile(a.downloadPath())
	log.Info("downloaded archive", "name", a.Name, "url", expected.URL, "bytes", size)

	// The file was verified as it was written; it is checked again as it is read, whole, before any member is
	// installed: every named member there once, a regular file.
	if err := a.scan(n, expected, nil); err != nil {
		return err
	}
	mode := os.FileMode(0o755)
	if expected.Mode != nil {
		mode = *expected.Mode
	}
	rec := archiveRecord{SHA256: expected.SHA256, Members: map[string]archiveMember{}}
	err = a.scan(n, expected, func(name string, r io.Reader) error {
		p := expected.Members[name]
		h := sha256.New()
		if err := n.writeAtomic(ctx, p, mode, 0, 0, func(w io.Writer) error {
			_, err := io.Copy(io.MultiWriter(w, h), r)
			return err
		}); err != nil {
			return err
		}
		rec.Members[name] = archiveMember{Path: p, SHA256: hex.EncodeToString(h.Sum(nil))}
		log.Info("installed", "path", p, "from", a.Name+":"+name)
		return nil
	})
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return n.writeFileAtomic(ctx, a.recordPath(), append(data, '\n'), 0o644, -1, -1)
}

// scan reads the downloaded archive: every member named in expected.Members must be a regular file, there once;
// no member name may be absolute or climb out with "..". With install nil, it only checks; else it hands each
// named member's contents to install. The archive's sha256 is computed over what is read, and a scan that does
// not read the archive expected names fails.
func (a *Archive) scan(n *Node, expected *Archive, install func(name string, r io.Reader) error) error {
	f, err := n.openNodeFile(a.downloadPath(), false)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	gz, err := gzip.NewReader(io.TeeReader(f, h))
	if err != nil {
		return engine.Terminal(fmt.Errorf("archive %s (%s): not gzip'd: %w", a.Name, expected.URL, err))
	}
	tr := tar.NewReader(gz)
	found := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return engine.Terminal(fmt.Errorf("archive %s (%s): reading it: %w", a.Name, expected.URL, err))
		}
		if path.IsAbs(hdr.Name) || climbs(hdr.Name) {
			return engine.Terminal(fmt.Errorf("archive %s (%s): member %q names a path outside the archive: refused, nothing installed", a.Name, expected.URL, hdr.Name))
		}
		name := memberName(hdr.Name)
		if _, want := expected.Members[name]; !want {
			continue
		}
		if hdr.Typeflag != tar.TypeReg {
			return engine.Terminal(fmt.Errorf("archive %s (%s): member %s is a %s, not a regular file: refused, nothing installed", a.Name, expected.URL, name, tarType(hdr.Typeflag)))
		}
		if found[name] {
			return engine.Terminal(fmt.Errorf("archive %s (%s): member %s is there twice: refused, nothing installed", a.Name, expected.URL, name))
		}
		found[name] = true
		if install != nil {
			if err := install(name, tr); err != nil {
				return err
			}
		}
	}
	if _, err := io.Copy(io.Discard, io.TeeReader(f, h)); err != nil {
		return engine.FileError(err)
	}
	for _, m := range slices.Sorted(maps.Keys(expected.Members)) {
		if !found[m] {
			return engine.Terminal(fmt.Errorf("archive %s (%s): has no member %s: nothing installed from it", a.Name, expected.URL, m))
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != expected.SHA256 {
		return engine.Terminal(&HashMismatchError{URL: expected.URL, Got: got, Want: expected.SHA256})
	}
	return nil
}

func tarType(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeDir:
		return "directory"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}
