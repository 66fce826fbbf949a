package model

import (
	"strings"
	"testing"
)

// TestValidNodeID: host names and instance ids are node ids; an id with a control character (ESC, a newline), a
// space, a '/', or one that is empty, too long or starts with '.' or '-' is refused, quoted so that the message
// itself prints no control character.
func TestValidNodeID(t *testing.T) {
	for _, id := range []string{"node-7", "i-0123456789abcdef0", "cp-a.us-central1-a.c.proj.internal", "w_3", "A", strings.Repeat("a", 253)} {
		if err := ValidNodeID(id); err != nil {
			t.Errorf("ValidNodeID(%q) = %v, want nil", id, err)
		}
	}
	for id, want := range map[string]string{
		"":                       "the node id is empty",
		"evil\x1b[2J":            `node id "evil\x1b[2J" holds '\x1b'`,
		"a\nb":                   `node id "a\nb" holds '\n'`,
		"a b":                    `holds ' '`,
		"../x":                   `starts with "."`,
		"x/y":                    `holds '/'`,
		"-x":                     `starts with "-"`,
		"nœud":                   `holds 'œ'`,
		"a\u202eb":               `holds '\u202e'`,
		strings.Repeat("a", 254): "is 254 characters long",
	} {
		err := ValidNodeID(id)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "letters, digits") {
			t.Errorf("ValidNodeID(%q) = %v, want an error containing %q and the rule", id, err, want)
			continue
		}
		if strings.ContainsAny(err.Error(), "\x1b\n\u202e") {
			t.Errorf("ValidNodeID(%q): the error holds a control character: %q", id, err)
		}
	}
}
