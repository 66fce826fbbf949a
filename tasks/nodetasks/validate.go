package nodetasks

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Every node task has a Validate method (engine.Validator): the rules that need no look at the node, which the
// engine checks for every task before any task's Find, so that one bad task leaves the whole node untouched
// rather than half-converged. CheckChanges calls it too, for callers that run a task alone.

// checkNodePath vets a path on the node that a task's field names: absolute, clean (no "..", no "//"), no NUL.
func checkNodePath(field, p string) error {
	switch {
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("field %s: %q contains a NUL byte", field, p)
	case !filepath.IsAbs(p):
		return fmt.Errorf("field %s: %q is not an absolute path: write it from the node's root, such as /etc/kubernetes/kubelet.conf", field, p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("field %s: %q is not clean: write %q", field, p, filepath.Clean(p))
	}
	return nil
}

// modeBits are the bits a Mode may have: permissions, setuid, setgid, sticky.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func checkMode(field string, m *os.FileMode) error {
	if m != nil && *m&^modeBits != 0 {
		return fmt.Errorf("field %s: %v (%#o) has bits other than permissions, setuid, setgid and sticky: "+
			"give permission bits such as 0644, and setuid, setgid, sticky as fs.ModeSetuid, fs.ModeSetgid, fs.ModeSticky "+
			"(a raw 04000 is not setuid in Go)", field, *m, uint32(*m))
	}
	return nil
}

// idName is a user or group name as shadow's useradd and groupadd accept them.
var idName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)

// checkOwner vets an Owner or Group: a name that can be in /etc/passwd or /etc/group, or a numeric id.
func checkOwner(field string, v *string) error {
	if v == nil {
		return nil
	}
	if id, err := strconv.ParseUint(*v, 10, 32); err == nil && id < 1<<32-1 {
		return nil
	}
	if len(*v) > 32 || !idName.MatchString(*v) {
		return fmt.Errorf("field %s: %q is neither a numeric id nor a user or group name (letters, digits, _ . -, "+
			"at most 32 characters, not starting with a digit or -)", field, *v)
	}
	return nil
}
