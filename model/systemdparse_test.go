package model

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// This file reads environment files and unit-file command lines back the way systemd 252 (Debian 12) does, so
// that tests can check what a service would really get from what kubeup writes. It is written from the rules of
// systemd.exec(5) (EnvironmentFile=), systemd.service(5) (command lines, $FOO and ${FOO}) and systemd.syntax(7)
// (quoting), not from systemd's code.

// envVar is one assignment of an environment file.
type envVar struct{ Name, Value string }

// parseEnvFile reads an EnvironmentFile= file: newline-separated NAME=VALUE assignments; empty lines, lines
// without "=" and lines starting with "#" or ";" are ignored (a backslash at the end of a comment line continues
// the comment, as systemd before 254 has it). A value may be unquoted (backslash escapes the next character,
// backslash-newline continues the line, quotes inside are kept, trailing whitespace is dropped), single-quoted
// (verbatim, may span lines) or double-quoted (backslash escapes one of "\`$ or a newline; before any other
// character it is kept). After a closing quote the value goes on, as in a shell.
func parseEnvFile(text string) ([]envVar, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("not UTF-8: systemd refuses the file")
	}
	if strings.ContainsRune(text, 0) {
		return nil, fmt.Errorf("NUL byte: systemd refuses the file")
	}
	const (
		preKey = iota
		key
		preValue
		value
		valueEscape
		single
		double
		doubleEscape
		comment
		commentEscape
	)
	var (
		vars       []envVar
		k, v       strings.Builder
		state      = preKey
		trailingWS = -1 // where a run of trailing unquoted whitespace starts in v, or -1
	)
	push := func() error {
		name := strings.TrimRight(k.String(), " \t\r")
		val := v.String()
		if trailingWS >= 0 {
			val = val[:trailingWS]
		}
		if !envNameOK(name) {
			return fmt.Errorf("invalid variable name %q", name)
		}
		vars = append(vars, envVar{name, val})
		k.Reset()
		v.Reset()
		trailingWS = -1
		return nil
	}
	for _, c := range text {
		switch state {
		case preKey:
			switch {
			case c == '#' || c == ';':
				state = comment
			case !strings.ContainsRune(" \t\r\n", c):
				state = key
				k.WriteRune(c)
			}
		case key:
			switch c {
			case '\n':
				state = preKey // a line without "=" is ignored
				k.Reset()
			case '=':
				state = preValue
			default:
				k.WriteRune(c)
			}
		case preValue:
			switch {
			case c == '\n':
				state = preKey
				if err := push(); err != nil {
					return nil, err
				}
			case c == '\'':
				state = single
			case c == '"':
				state = double
			case c == '\\':
				state = valueEscape
			case c == ' ' || c == '\t' || c == '\r':
			default:
				state = value
				v.WriteRune(c)
			}
		case value:
			switch {
			case c == '\n':
				state = preKey
				if err := push(); err != nil {
					return nil, err
				}
			case c == '\\':
				state = valueEscape
				trailingWS = -1
			case c == ' ' || c == '\t' || c == '\r':
				if trailingWS < 0 {
					trailingWS = v.Len()
				}
				v.WriteRune(c)
			default:
				trailingWS = -1
				v.WriteRune(c)
			}
		case valueEscape:
			state = value
			if c != '\n' {
				v.WriteRune(c)
			}
		case single:
			if c == '\'' {
				state = preValue
			} else {
				v.WriteRune(c)
			}
		case double:
			switch c {
			case '"':
				state = preValue
			case '\\':
				state = doubleEscape
			default:
				v.WriteRune(c)
			}
		case doubleEscape:
			state = double
			switch {
			case strings.ContainsRune("\"\\`$", c):
				v.WriteRune(c)
			case c != '\n':
				v.WriteRune('\\')
				v.WriteRune(c)
			}
		case comment:
			switch c {
			case '\\':
				state = commentEscape
			case '\n':
				state = preKey
			}
		case commentEscape:
			state = comment
		}
	}
	switch state {
	case preValue, value, valueEscape, single, double, doubleEscape:
		if err := push(); err != nil {
			return nil, err
		}
	}
	return vars, nil
}

// envNameOK is systemd's rule for variable names: letters, digits and "_", not starting with a digit.
func envNameOK(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// splitVarWord is what a command line's "$FOO" (a word of its own, unbraced) becomes: systemd splits the value
// at whitespace into zero or more arguments, honouring quotes and backslashes in the value as a shell would
// (systemd 252). Older systemd split at whitespace only; splitVarWordPlain is that reading. kubeup writes only
// values both read alike.
func splitVarWord(val string) ([]string, error) {
	var (
		words  []string
		w      strings.Builder
		inWord bool
		quote  rune
		escape bool
	)
	for _, c := range val {
		switch {
		case escape:
			w.WriteRune(c)
			escape = false
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteRune(c)
			}
		case quote == '"':
			switch c {
			case '"':
				quote = 0
			case '\\':
				escape = true
			default:
				w.WriteRune(c)
			}
		case c == '\\':
			escape, inWord = true, true
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case strings.ContainsRune(" \t\n\r", c):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 || escape {
		return nil, fmt.Errorf("unbalanced quote or trailing backslash in %q", val)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

func splitVarWordPlain(val string) []string {
	return strings.FieldsFunc(val, func(r rune) bool { return strings.ContainsRune(" \t\n\r", r) })
}

// parseCommandLine reads the value of an ExecStart= line into its words, as systemd does when it loads the
// unit: "%%" is "%" (any other specifier is an error here: kubeup writes none), words are separated by
// whitespace, double- and single-quoted words may hold whitespace, C escapes (\n, \t, \\, \", \', \xNN, ...)
// are decoded. A word "$$..." keeps its "$$": the substitution of variables (where "$$" becomes "$") happens at
// start, see expandCommandLine.
func parseCommandLine(line string) ([]string, error) {
	var unspec strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] != '%' {
			unspec.WriteByte(line[i])
			continue
		}
		if i+1 < len(line) && line[i+1] == '%' {
			unspec.WriteByte('%')
			i++
			continue
		}
		return nil, fmt.Errorf("specifier %q in %q: systemd would replace it", line[i:min(i+2, len(line))], line)
	}
	var (
		words  []string
		w      strings.Builder
		inWord bool
		quote  byte
	)
	s := unspec.String()
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("trailing backslash in %q", line)
			}
			i++
			inWord = true
			switch e := s[i]; e {
			case 'n':
				w.WriteByte('\n')
			case 't':
				w.WriteByte('\t')
			case 'r':
				w.WriteByte('\r')
			case '\\', '"', '\'', ' ':
				w.WriteByte(e)
			case 'x':
				if i+2 >= len(s) {
					return nil, fmt.Errorf("short \\x escape in %q", line)
				}
				var b byte
				if _, err := fmt.Sscanf(s[i+1:i+3], "%02x", &b); err != nil {
					return nil, fmt.Errorf("bad \\x escape in %q", line)
				}
				w.WriteByte(b)
				i += 2
			default:
				return nil, fmt.Errorf("unknown escape \\%c in %q", e, line)
			}
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// expandCommandLine substitutes the environment into the words of a command line as systemd does when it starts
// the service: a word "$FOO" becomes the value of FOO split into words (splitVarWord, and the test fails when the
// older plain split would differ), "${FOO}" the value whole, "$$" is "$".
func expandCommandLine(t *testing.T, words []string, env map[string]string) []string {
	t.Helper()
	var argv []string
	for _, w := range words {
		if name, ok := strings.CutPrefix(w, "$"); ok && envNameOK(name) {
			split, err := splitVarWord(env[name])
			if err != nil {
				t.Fatalf("$%s: %v", name, err)
			}
			if diff := cmp.Diff(splitVarWordPlain(env[name]), split); diff != "" {
				t.Errorf("$%s is split differently by systemd versions that do and do not unquote (-plain +unquoted):\n%s", name, diff)
			}
			argv = append(argv, split...)
			continue
		}
		var out strings.Builder
		for i := 0; i < len(w); i++ {
			switch {
			case strings.HasPrefix(w[i:], "$$"):
				out.WriteByte('$')
				i++
			case strings.HasPrefix(w[i:], "${"):
				end := strings.IndexByte(w[i:], '}')
				if end < 0 {
					t.Fatalf("unterminated ${ in %q", w)
				}
				out.WriteString(env[w[i+2:i+end]])
				i += end
			case w[i] == '$':
				t.Fatalf("a bare $ in %q: systemd would read a variable there", w)
			default:
				out.WriteByte(w[i])
			}
		}
		argv = append(argv, out.String())
	}
	return argv
}

// unitDirective returns the values of a directive in a unit file's text (every "Name=value" line).
func unitDirective(unit, name string) []string {
	var values []string
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			values = append(values, v)
		}
	}
	return values
}

// TestSystemdParsers pins the test readers themselves against the examples of systemd's manual pages.
func TestSystemdParsers(t *testing.T) {
	env, err := parseEnvFile("# comment \\\nSKIPPED=1\n; other\nA=plain  \nB=\"two words\" \nC='it''s'\nD=\"a\\\"b\\$c\\x\"\nE=a\\\nb\n  F = x\"y\nNOEQUALS\nG=\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []envVar{{"A", "plain"}, {"B", "two words"}, {"C", "its"}, {"D", `a"b$c\x`}, {"E", "ab"}, {"F", `x"y`}, {"G", ""}}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("parseEnvFile (-want +got):\n%s", diff)
	}

	// systemd.service(5): Environment=ONE='one' "TWO='two two' too" THREE=; ExecStart=/bin/echo $ONE $TWO $THREE
	// gives "one", "two two", "too".
	if got, _ := splitVarWord("'two two' too"); !cmp.Equal(got, []string{"two two", "too"}) {
		t.Errorf("splitVarWord: %q", got)
	}

	words, err := parseCommandLine(`/bin/echo "a b" 100%% c\x20d "q\"uote" $$HOME $FOO ${BAR}`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/bin/echo", "a b", "100%", "c d", `q"uote`, "$$HOME", "$FOO", "${BAR}"}, words); diff != "" {
		t.Errorf("parseCommandLine (-want +got):\n%s", diff)
	}
	argv := expandCommandLine(t, words, map[string]string{"FOO": "x  y", "BAR": "p q"})
	if diff := cmp.Diff([]string{"/bin/echo", "a b", "100%", "c d", `q"uote`, "$HOME", "x", "y", "p q"}, argv); diff != "" {
		t.Errorf("expandCommandLine (-want +got):\n%s", diff)
	}
	if _, err := parseCommandLine("/bin/echo %h"); err == nil {
		t.Error("parseCommandLine accepted a specifier")
	}
}
