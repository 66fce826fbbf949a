package main

import (
	"fmt"
	"path/filepath"
)

// Dir is the world the demo converges: a directory tree on this machine. Task paths are relative to Root.
type Dir struct {
	Root string
}

// path resolves a task's relative path under the root, refusing a path that would leave it.
func (d *Dir) path(rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("path %q must be relative and stay inside %s", rel, d.Root)
	}
	return filepath.Join(d.Root, rel), nil
}
