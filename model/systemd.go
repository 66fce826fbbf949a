package model

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Writing values into systemd's files. Every value a node's environment files and units carry goes through
// one of these, whatever validation said about it: a value either reaches the service as exactly what it is, or
// the builder refuses it. Nothing a spec holds can add a line, a variable or an argument.
//
// The rules are systemd's own: systemd.exec(5) for EnvironmentFile= files, systemd.service(5) and
// systemd.syntax(7) for command lines (quoting, C escapes, "%" specifiers, "$" variables).

// plainWord reports whether s is non-empty and made only of characters that mean nothing to systemd anywhere:
// in an environment file, in a command line, and in the split of a "$FOO" word (which older systemd splits at
// whitespace only, and newer systemd also unquotes). Such a word reads back the same under every rule.
func plainWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return false
		}
	}
	return true
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:=,+@", c) >= 0
}

// plainChars says in words which characters plainWord accepts, for error messages.
const plainChars = "letters, digits and - _ . / : = , + @"

// systemdText refuses what no systemd file may hold: text that is not UTF-8, NUL bytes, the byte order mark and
// Unicode noncharacters (systemd.exec(5)).
func systemdText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		switch {
		case r == 0:
			return errors.New("a NUL byte")
		case r == 0xFEFF:
			return errors.New("a byte order mark (U+FEFF)")
		case r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE:
			return fmt.Errorf("the Unicode noncharacter %U", r)
		}
	}
	return nil
}

// envAssignment is one line of an EnvironmentFile= file that sets the variable name to exactly value: the value
// double-quoted, with the four characters systemd unescapes there (" \ ` $) escaped. A newline in the value is
// part of it, not the end of the assignment.
func envAssignment(name, value string) (string, error) {
	if !validEnvName(name) {
		return "", fmt.Errorf("%q is not an environment variable name: letters, digits and _, not starting with a digit", name)
	}
	if err := systemdText(value); err != nil {
		return "", fmt.Errorf("the value of %s holds %w, which systemd cannot read from an environment file", name, err)
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteString(`="`)
	for _, r := range value {
		if strings.ContainsRune("\"\\`$", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteString("\"\n")
	return b.String(), nil
}

func validEnvName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// execArg is s as one argument of an ExecStart= line: "%" written as "%%" (no specifier) and "$" as "$$" (no
// variable); a word with anything but plain characters double-quoted, with C escapes for backslash, quotes and
// control characters. systemd reads it back as exactly s.
func execArg(s string) (string, error) {
	if err := systemdText(s); err != nil {
		return "", fmt.Errorf("argument %q holds %w, which systemd cannot read from a unit", s, err)
	}
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	plain := s != ""
	for i := 0; plain && i < len(s); i++ {
		plain = plainByte(s[i]) || s[i] == '%' || s[i] == '$'
	}
	if plain {
		return s, nil
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// execLine is the value of an ExecStart= line that runs argv: the program, an absolute path, and its arguments,
// each written by execArg.
func execLine(argv ...string) (string, error) {
	if len(argv) == 0 || !strings.HasPrefix(argv[0], "/") {
		return "", fmt.Errorf("command %q: the program must be an absolute path", argv)
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		w, err := execArg(a)
		if err != nil {
			return "", err
		}
		words[i] = w
	}
	return strings.Join(words, " "), nil
}

// ExecLine is execLine for the other packages that write units (nodeup's own unit): the value of an ExecStart=
// line that runs argv, each word written by execArg so that systemd reads back exactly argv.
func ExecLine(argv ...string) (string, error) { return execLine(argv...) }

// unitPath is a path as the value of a unit directive that takes one (EnvironmentFile=): "%" written as "%%". A
// path with whitespace, a quote, a backslash or a control character is refused: such directives do not unquote.
func unitPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \t\r\n\"'\\") || systemdText(p) != nil {
		return "", fmt.Errorf("%q cannot be written into a unit: want an absolute path without whitespace, quotes, backslashes or control characters", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("%q cannot be written into a unit: it holds a control character", p)
		}
	}
	return strings.ReplaceAll(p, "%", "%%"), nil
}
