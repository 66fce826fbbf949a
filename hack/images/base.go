package main

import (
	"archive/tar"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// base is a -base option: the image ref gets a base layer of the tree under dir.
type base struct {
	ref name.Tag
	dir string
}

type bases []base

func (b *bases) String() string { return fmt.Sprint(len(*b), " bases") }

func (b *bases) Set(v string) error {
	ref, dir, ok := strings.Cut(v, "=")
	if !ok || dir == "" {
		return fmt.Errorf("-base %q: want REF=ROOTDIR", v)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("-base %q: %q is not a full image reference with a tag: %w", v, ref, err)
	}
	*b = append(*b, base{ref: tag, dir: dir})
	return nil
}

// withBases gives each image its base, before anything is written: refused, a base that is not a directory, of
// an image no -image names, or a second base of one image.
func withBases(images specs, bs bases) (specs, error) {
	out := append(specs(nil), images...)
	for _, b := range bs {
		st, err := os.Stat(b.dir)
		if err != nil {
			return nil, fmt.Errorf("-base %s=%s: %w", b.ref, b.dir, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("-base %s=%s: %s is not a directory: unpack the base's files into one", b.ref, b.dir, b.dir)
		}
		found := false
		for i := range out {
			if out[i].ref.String() != b.ref.String() {
				continue
			}
			if out[i].base != "" {
				return nil, fmt.Errorf("-base %s=%s: %s has a base already (%s)", b.ref, b.dir, b.ref, out[i].base)
			}
			out[i].base, found = b.dir, true
		}
		if !found {
			return nil, fmt.Errorf("-base %s=%s: no -image names %s: give its binaries with -image %s=FILE:PATH", b.ref, b.dir, b.ref, b.ref)
		}
	}
	return out, nil
}

// writeTree writes a tar of the tree under root at dst, as the root of an image: every directory, regular file
// and symbolic link under it (a link's target as it is: in a container, an absolute one resolves in the image),
// in lexical order, with their permission bits (setuid, setgid and sticky too), owned by root, every timestamp
// the epoch. Anything else (a device, a pipe, a socket) is refused, naming it: a base is files a package ships.
func writeTree(dst, root string) error {
	st, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", root)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(info.Mode().Perm())
		if info.Mode()&fs.ModeSetuid != 0 {
			mode |= 0o4000
		}
		if info.Mode()&fs.ModeSetgid != 0 {
			mode |= 0o2000
		}
		if info.Mode()&fs.ModeSticky != 0 {
			mode |= 0o1000
		}
		switch t := info.Mode().Type(); {
		case t == fs.ModeDir:
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
		case t == fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
		case t.IsRegular():
			return addFile(tw, p, name, mode)
		default:
			return fmt.Errorf("%s is %s: a base holds only directories, regular files and symbolic links", p, kind(t))
		}
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// kind names a file type that a base refuses.
func kind(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file (" + t.String() + ")"
}
