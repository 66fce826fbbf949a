// Package mountinfo reads the fields of /proc/PID/mountinfo (proc(5)), for the node tasks and the e2e tests'
// clean-up alike.
package mountinfo

import (
	"strconv"
	"strings"
)

// Unescape undoes the kernel's escaping of a mountinfo field: a space, tab, newline or backslash in a path is
// written as a backslash and three octal digits ("\040" for a space).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
