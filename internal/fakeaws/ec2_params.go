package fakeaws

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The parameters of EC2 requests, client tokens, filters and pages.

// ---- parameters

// indexes are the N of the parameters prefix.N and prefix.N.*, in order.
func indexes(form url.Values, prefix string) []int {
	seen := map[int]bool{}
	for k := range form {
		rest, ok := strings.CutPrefix(k, prefix+".")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); err == nil && n > 0 {
			seen[n] = true
		}
	}
	ns := make([]int, 0, len(seen))
	for n := range seen {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	return ns
}

// strList is the list parameter prefix.1, prefix.2, ...
func strList(form url.Values, prefix string) []string {
	var out []string
	for _, n := range indexes(form, prefix) {
		if v, ok := form[fmt.Sprintf("%s.%d", prefix, n)]; ok && len(v) > 0 {
			out = append(out, v[0])
		}
	}
	return out
}

// subPrefixes are prefix.1, prefix.2, ... for the structures of list parameter prefix.
func subPrefixes(form url.Values, prefix string) []string {
	var out []string
	for _, n := range indexes(form, prefix) {
		out = append(out, fmt.Sprintf("%s.%d", prefix, n))
	}
	return out
}

func has(form url.Values, key string) bool { _, ok := form[key]; return ok }

// hasUnder reports whether a parameter is key or under key (key.*).
func hasUnder(form url.Values, key string) bool {
	for k := range form {
		if k == key || strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

func required(form url.Values, key string) (string, error) {
	v := form.Get(key)
	if v == "" {
		return "", errorf("MissingParameter", "The request must contain the parameter %s", key)
	}
	return v, nil
}

// intParam is an integer parameter; ok false when absent.
func intParam(form url.Values, key string) (int64, bool, error) {
	if !has(form, key) {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(form.Get(key), 10, 64)
	if err != nil {
		return 0, false, errorf("InvalidParameterValue", "Value (%s) for parameter %s is invalid: not an integer", form.Get(key), key)
	}
	return n, true, nil
}

func boolParam(form url.Values, key string) (bool, bool, error) {
	if !has(form, key) {
		return false, false, nil
	}
	b, err := strconv.ParseBool(form.Get(key))
	if err != nil {
		return false, false, errorf("InvalidParameterValue", "Value (%s) for parameter %s is invalid: not a boolean", form.Get(key), key)
	}
	return b, true, nil
}

// tagParams are the tags prefix.N.Key / prefix.N.Value.
func tagParams(form url.Values, prefix string) (map[string]string, error) {
	tags := map[string]string{}
	for _, p := range subPrefixes(form, prefix) {
		k := form.Get(p + ".Key")
		if k == "" {
			return nil, errorf("InvalidParameterValue", "Tag keys cannot be empty (%s.Key)", p)
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, errorf("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
		tags[k] = form.Get(p + ".Value")
	}
	return tags, nil
}

// tagSpecs are the TagSpecification.N of a create: the tags by resource type, each type one of allowed.
func tagSpecs(form url.Values, prefix string, allowed ...string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, p := range subPrefixes(form, prefix) {
		rt := form.Get(p + ".ResourceType")
		if !slices.Contains(allowed, rt) {
			return nil, errorf("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt)
		}
		tags, err := tagParams(form, p+".Tag")
		if err != nil {
			return nil, err
		}
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for k, v := range tags {
			out[rt][k] = v
		}
	}
	return out, nil
}

// ---- client tokens

// tagParam is a tag of a TagSpecification: its prefix, the tag's index and Key or Value.
var tagParam = regexp.MustCompile(`^(.*TagSpecification\.\d+)\.Tag\.(\d+)\.(Key|Value)$`)

// requestParams encodes a request's parameters but the client token, the tags of its tag specifications by
// their keys rather than their order (a retry may list them in another order).
func requestParams(form url.Values) string {
	f := url.Values{}
	tags := map[string]map[string][2]string{} // spec -> tag index -> key, value
	for k, v := range form {
		if k == "ClientToken" || k == "Version" {
			continue
		}
		if m := tagParam.FindStringSubmatch(k); m != nil {
			if tags[m[1]] == nil {
				tags[m[1]] = map[string][2]string{}
			}
			kv := tags[m[1]][m[2]]
			if m[3] == "Key" {
				kv[0] = strings.Join(v, ",")
			} else {
				kv[1] = strings.Join(v, ",")
			}
			tags[m[1]][m[2]] = kv
			continue
		}
		f[k] = v
	}
	for spec, byIndex := range tags {
		var kvs []string
		for _, kv := range byIndex {
			kvs = append(kvs, kv[0]+"="+kv[1])
		}
		sort.Strings(kvs)
		f[spec+".Tags"] = kvs
	}
	return f.Encode()
}

// tokenAnswerFor is the earlier answer of the same action, region and client token: (nil, nil) when none, an
// IdempotentParameterMismatch when the earlier request had other parameters.
func (s *Server) tokenAnswerFor(region string, form url.Values) (any, error) {
	tok := form.Get("ClientToken")
	if tok == "" {
		return nil, nil
	}
	prev, ok := s.ec2.tokens[form.Get("Action")+"/"+region+"/"+tok]
	if !ok {
		return nil, nil
	}
	if prev.params != requestParams(form) {
		return nil, errorf("IdempotentParameterMismatch", "The client token %s was used before with other parameters.", tok)
	}
	return prev.answer, nil
}

func (s *Server) rememberToken(region string, form url.Values, answer any) {
	if tok := form.Get("ClientToken"); tok != "" {
		s.ec2.tokens[form.Get("Action")+"/"+region+"/"+tok] = tokenAnswer{params: requestParams(form), answer: answer}
	}
}

// ---- filters

type filter struct {
	name   string
	values []string
}

// matches reports whether a resource with tags whose other filterable values field gives passes every filter:
// one of its values matches one of the filter's (with * and ? wildcards).
func matches(filters []filter, tags map[string]string, field func(name string) []string) bool {
	for _, f := range filters {
		var have []string
		switch {
		case strings.HasPrefix(f.name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.name, "tag:")]; ok {
				have = []string{v}
			}
		case f.name == "tag-key":
			have = sortedKeys(tags)
		case f.name == "tag-value":
			for _, v := range tags {
				have = append(have, v)
			}
		default:
			have = field(f.name)
		}
		if !anyMatch(f.values, have) {
			return false
		}
	}
	return true
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if glob(p, v) {
				return true
			}
		}
	}
	return false
}

// globs are the patterns compiled, shared by every Server.
var globs sync.Map // string -> *regexp.Regexp

// glob matches v against pattern, where * is any run of characters and ? any one.
func glob(pattern, v string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == v
	}
	var re *regexp.Regexp
	if c, ok := globs.Load(pattern); ok {
		re = c.(*regexp.Regexp)
	} else {
		var b strings.Builder
		b.WriteString("^")
		for _, r := range pattern {
			switch r {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString("$")
		re = regexp.MustCompile(b.String())
		globs.Store(pattern, re)
	}
	return re.MatchString(v)
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

func i32s(n int32) []string { return []string{strconv.Itoa(int(n))} }

// ---- pages

// page cuts one page out of items (in id order) with the request's MaxResults and NextToken: all of them when
// there is no MaxResults, which must otherwise be at least min; more than max returns max. The NextToken of the answer is "" on the
// last page.
func page[T any](form url.Values, maxKey string, items []T, id func(T) string, min, max int) ([]T, string, error) {
	start := 0
	if tok := form.Get("NextToken"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, "", errorf("InvalidParameterValue", "Unable to parse pagination token %q", tok)
		}
		from := string(b)
		start = sort.Search(len(items), func(i int) bool { return id(items[i]) >= from })
	}
	items = items[start:]
	n, ok, err := intParam(form, maxKey)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return items, "", nil
	}
	if n < int64(min) {
		return nil, "", errorf("InvalidParameterValue", "Value ( %d ) for parameter %s is invalid. Expecting a value between %d and %d.", n, maxKey, min, max)
	}
	// A larger MaxResults returns max items, as EC2 documents it (the AWS CLI's paging asks for 1000).
	n = min64(n, int64(max))
	if int(n) >= len(items) {
		return items, "", nil
	}
	return items[:n], base64.RawURLEncoding.EncodeToString([]byte(id(items[n]))), nil
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
