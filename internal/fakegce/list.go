package fakegce

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A filter is a conjunction of terms on a resource's JSON fields (see the package documentation).
type filter []term

type term struct {
	field, op, value string
	re               *regexp.Regexp
}

var (
	parenTerm = regexp.MustCompile(`\(([^()]*)\)`)
	andSplit  = regexp.MustCompile(`(?i)\s+AND\s+`)
	termRE    = regexp.MustCompile(`^\s*([A-Za-z0-9_.\-]+)\s*(!=|=|:|\beq\b|\bne\b)\s*(.*?)\s*$`)
)

// parseFilter parses a list call's filter ("" matches everything).
func parseFilter(s string) (filter, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var parts []string
	if ms := parenTerm.FindAllStringSubmatch(s, -1); ms != nil {
		if rest := strings.TrimSpace(andSplit.ReplaceAllString(parenTerm.ReplaceAllString(s, ""), "")); rest != "" && !strings.EqualFold(rest, "AND") {
			return nil, invalid("Invalid value for field 'filter': '%s'. Invalid list filter expression.", s)
		}
		for _, m := range ms {
			parts = append(parts, m[1])
		}
	} else {
		parts = andSplit.Split(s, -1)
	}
	var f filter
	for _, p := range parts {
		m := termRE.FindStringSubmatch(p)
		if m == nil {
			return nil, invalid("Invalid value for field 'filter': '%s'. Invalid list filter expression.", s)
		}
		t := term{field: m[1], op: strings.ToLower(m[2]), value: m[3]}
		if uq, err := strconv.Unquote(t.value); err == nil && strings.HasPrefix(t.value, `"`) {
			t.value = uq
		}
		var pattern string
		switch t.op {
		case "eq", "ne":
			pattern = "^(?:" + t.value + ")$"
		case "=", "!=":
			pattern = "^" + strings.ReplaceAll(regexp.QuoteMeta(t.value), `\*`, ".*") + "$"
		case ":":
			if t.value != "*" {
				pattern = "^" + regexp.QuoteMeta(t.value) + "$"
			}
		}
		if pattern != "" {
			re, err := regexp.Compile(pattern)
			if err != nil {
				return nil, invalid("Invalid value for field 'filter': '%s': %v", s, err)
			}
			t.re = re
		}
		f = append(f, t)
	}
	return f, nil
}

// matches reports whether the resource v passes every term.
func (f filter) matches(v any) bool {
	if len(f) == 0 {
		return true
	}
	m := toMap(v)
	for _, t := range f {
		val, present := lookup(m, t.field)
		switch t.op {
		case ":":
			if !present || t.re != nil && !t.re.MatchString(val) {
				return false
			}
		case "=", "eq":
			if !present || !t.re.MatchString(val) {
				return false
			}
		case "!=", "ne":
			if present && t.re.MatchString(val) {
				return false
			}
		}
	}
	return true
}

// lookup finds a dotted path in a JSON map, as a string.
func lookup(m map[string]any, path string) (string, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = mm[k]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	case nil:
		return "", false
	}
	b, _ := json.Marshal(cur)
	return string(b), true
}

const maxPage = 500

// page sorts keyed items by key, keeps those f matches, and returns the page the call asks for (maxResults,
// pageToken) with the token of the next page ("" at the end).
func page[T any](c *call, items map[string]T, keep func(T) bool) ([]T, string, error) {
	f, err := parseFilter(c.query.Get("filter"))
	if err != nil {
		return nil, "", err
	}
	size := maxPage
	if s := c.query.Get("maxResults"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, "", invalid("Invalid value for field 'maxResults': '%s'. Must be a non-negative integer.", s)
		}
		if n > 0 && n < maxPage {
			size = n
		}
	}
	after := ""
	if tok := c.query.Get("pageToken"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || !strings.HasPrefix(string(b), "after:") {
			return nil, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'pageToken': '%s'.", tok)
		}
		after = strings.TrimPrefix(string(b), "after:")
	}
	keys := make([]string, 0, len(items))
	for k := range items {
		if k > after || after == "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []T
	for i, k := range keys {
		v := items[k]
		if keep != nil && !keep(v) || !f.matches(v) {
			continue
		}
		if len(out) == size {
			return out, base64.RawURLEncoding.EncodeToString([]byte("after:" + keys[i-1])), nil
		}
		out = append(out, v)
	}
	return out, "", nil
}

// key joins the parts of a map key.
func key(parts ...string) string { return strings.Join(parts, "/") }
