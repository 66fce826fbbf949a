package model

import (
	"fmt"
	"strings"
)

// maxNodeID is the longest node id: a host name's limit.
const maxNodeID = 253

// ValidNodeID checks a node id, nodeup's and protokube's --node-id: the name a machine's volume claims carry and,
// on the local provider, the name of its record for `kubeup rolling-update`, which prints it. It is a plain
// name, as host names and instance ids are: letters, digits, '.', '-' and '_', not starting with '.' or '-', at
// most 253 characters. Anything else (a control character that would reach a terminal raw, a space, a '/') is
// refused.
func ValidNodeID(id string) error {
	const rule = "a node id is a plain name, such as the host name or the instance id: letters, digits, '.', '-' and '_', " +
		"not starting with '.' or '-', at most 253 characters"
	switch {
	case id == "":
		return fmt.Errorf("the node id is empty: %s", rule)
	case len(id) > maxNodeID:
		return fmt.Errorf("node id %q is %d characters long: %s", shorten(id), len(id), rule)
	case strings.HasPrefix(id, ".") || strings.HasPrefix(id, "-"):
		return fmt.Errorf("node id %q starts with %q: %s", id, id[:1], rule)
	}
	for _, r := range id {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("node id %q holds %q: %s", id, r, rule)
		}
	}
	return nil
}
