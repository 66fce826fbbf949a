package model

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The syntax of the values the spec passes on: into components' flags, a node's files, units and manifests.
// Each check returns "" for a valid value, else what is wrong and how to fix it, for a problem at the field's
// path. The rules are the components' own (Kubernetes' label syntax, container image references), narrowed where
// a value has to pass through systemd or a comma-separated flag unchanged.

var (
	labelName      = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	dnsSubdomain   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	identifier     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)        // feature gates, admission plugins
	headerWord     = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_:.]*$`) // request header names and prefixes, allowed names
	audience       = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9._:/]*[A-Za-z0-9/])?$`)
	issuerPath     = regexp.MustCompile(`^[-A-Za-z0-9._~/]*$`)
	etcdOverrideTo = regexp.MustCompile(`^[a-z0-9.-]*/[a-z0-9]+$`)
	imageRef       = func() *regexp.Regexp {
		domainPart := `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domain := domainPart + `(?:\.` + domainPart + `)*(?::[0-9]+)?`
		pathPart := `[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*`
		tag := `[\w][\w.-]{0,127}`
		digest := `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
		return regexp.MustCompile(`^(?:` + domain + `/)?` + pathPart + `(?:/` + pathPart + `)*(?::` + tag + `)?(?:@` + digest + `)?$`)
	}()
)

// labelKeyProblem checks a Kubernetes label key: an optional prefix (a DNS subdomain of at most 253 characters)
// and "/", then a name of at most 63 characters.
func labelKeyProblem(key string) string {
	const rule = `: want an optional DNS subdomain prefix (at most 253 lowercase characters) and "/", then a name of ` +
		`1-63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit (for example example.com/team)`
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	switch {
	case hasPrefix && (prefix == "" || len(prefix) > 253 || !dnsSubdomain.MatchString(prefix)):
		return fmt.Sprintf("%q is not a label key: its prefix %q is not a DNS subdomain%s", key, prefix, rule)
	case len(name) > 63 || !labelName.MatchString(name):
		return fmt.Sprintf("%q is not a label key%s", key, rule)
	}
	return ""
}

// labelValueProblem checks a Kubernetes label value: empty, or at most 63 characters.
func labelValueProblem(value string) string {
	if value == "" || len(value) <= 63 && labelName.MatchString(value) {
		return ""
	}
	return fmt.Sprintf("%q is not a label value: want at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or nothing", value)
}

// taintProblem checks a taint as kubelet's --register-with-taints takes it: key=value:Effect or key:Effect.
func taintProblem(taint string) string {
	kv, effect, ok := strings.Cut(taint, ":")
	key, value, _ := strings.Cut(kv, "=")
	switch {
	case !ok:
		return fmt.Sprintf("%q is not a taint: want key=value:Effect or key:Effect, for example dedicated=etcd:NoSchedule", taint)
	case effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute":
		return fmt.Sprintf("%q is not a taint: its effect %q is not NoSchedule, PreferNoSchedule or NoExecute", taint, effect)
	}
	if p := labelKeyProblem(key); p != "" {
		return fmt.Sprintf("the key of taint %q: %s", taint, p)
	}
	if p := labelValueProblem(value); p != "" {
		return fmt.Sprintf("the value of taint %q: %s", taint, p)
	}
	return ""
}

// validateFeatureGates checks a component's feature gates: each name an identifier, each value true or false.
func validateFeatureGates(ps *problems, p string, gates map[string]string) {
	for _, name := range sortedKeys(gates) {
		mp := mapPath(p, name)
		if !identifier.MatchString(name) {
			ps.add(mp, "%q is not a feature gate's name: want letters and digits, starting with a letter (for example InPlacePodVerticalScaling)", name)
		}
		if _, err := strconv.ParseBool(gates[name]); err != nil {
			ps.add(mp, "%q is not true or false", gates[name])
		}
	}
}

// mapPath is the path of a map's entry: spec.kubelet.nodeLabels["example.com/team"], the key quoted as in Go so
// that any key prints on one line.
func mapPath(p, key string) string { return p + "[" + strconv.Quote(key) + "]" }

// pathChars are the characters a path of the spec may hold besides letters and digits.
const pathChars = "/._-+@"

// pathProblem checks a file or directory path on a node: absolute, clean (as filepath.Clean leaves it), not the
// root directory, made of letters, digits and pathChars, each element at most 200 characters (room for the
// temporary file of an atomic write beside it) and at most 1024 in all.
func pathProblem(p string) string {
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(pathChars, r)) {
			return fmt.Sprintf("%q holds %q: a path may hold only letters, digits and %s", p, r, strings.Join(strings.Split(pathChars, ""), " "))
		}
	}
	switch {
	case !path.IsAbs(p):
		return fmt.Sprintf("%q must be an absolute path", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not a clean path: use %q", p, path.Clean(p))
	case p == "/":
		return fmt.Sprintf("%q is the root directory: name a file or directory under it", p)
	case len(p) > 1024:
		return fmt.Sprintf("%q is longer than 1024 characters", p)
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if len(elem) > 200 {
			return fmt.Sprintf("%q: its element %q is longer than 200 characters", p, elem)
		}
	}
	return ""
}

// validatePath adds pathProblem's problem for a field, and "required" when the field is empty and required.
func validatePath(ps *problems, field, p string, required bool) {
	switch {
	case p == "" && required:
		ps.add(field, "required: an absolute path")
	case p != "":
		if msg := pathProblem(p); msg != "" {
			ps.add(field, "%s", msg)
		}
	}
}

// imageProblem checks a container image reference: [registry[:port]/]repository[:tag][@digest].
func imageProblem(image string) string {
	switch {
	case image == "":
		return "required: a container image"
	case len(image) > 512 || !imageRef.MatchString(image):
		return fmt.Sprintf("%q is not a container image reference: want [registry/]repository[:tag][@digest], for example registry.k8s.io/kube-apiserver:v%s", image, DefaultKubernetesVersion)
	}
	return ""
}

// hostPortURLProblem checks a URL of the form scheme://HOST[:PORT] with one of the schemes: HOST an IP address or
// a DNS name, no user, path, query or fragment. It is what etcd's client URLs look like.
func hostPortURLProblem(u string, schemes ...string) string {
	bad := fmt.Sprintf("%q is not a URL of the form %s://HOST:PORT (for example http://127.0.0.1:4001)", u, strings.Join(schemes, "|"))
	parsed, err := url.Parse(u)
	if err != nil || !slices.Contains(schemes, parsed.Scheme) || parsed.User != nil || parsed.Opaque != "" ||
		parsed.Path != "" || parsed.RawQuery != "" || parsed.Fragment != "" || strings.ContainsAny(u, "?#") {
		return bad
	}
	if !hostOK(parsed.Hostname()) {
		return bad
	}
	if port := parsed.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad
		}
	} else if strings.HasSuffix(parsed.Host, ":") {
		return bad
	}
	return ""
}

// hostOK reports whether h is an IP address or a lowercase DNS name.
func hostOK(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return !strings.Contains(h, "%")
	}
	return validDNSName(h, 1) == ""
}

// etcdOverrideProblem checks one of kube-apiserver's --etcd-servers-overrides: group/resource#url;url...
func etcdOverrideProblem(o string) string {
	resource, servers, ok := strings.Cut(o, "#")
	if !ok || !etcdOverrideTo.MatchString(resource) || servers == "" {
		return fmt.Sprintf("%q is not an etcd servers override: want group/resource#URL;URL..., for example /events#http://127.0.0.1:4002", o)
	}
	for _, s := range strings.Split(servers, ";") {
		if msg := hostPortURLProblem(s, "http", "https"); msg != "" {
			return fmt.Sprintf("%q: %s", o, msg)
		}
	}
	return ""
}

// issuerProblem checks a service account issuer: an https URL with a host, and a path of plain characters.
func issuerProblem(issuer string) string {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(issuer, "?#%") || !hostOK(u.Hostname()) || !issuerPath.MatchString(u.Path) || u.Port() == "" && strings.HasSuffix(u.Host, ":") {
		return fmt.Sprintf("%q is not an issuer URL: want https://HOST[:PORT][/PATH], the path of letters, digits and . _ ~ / - (for example https://api.internal.demo.example.com)", issuer)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("%q: port %s is not 1-65535", issuer, port)
		}
	}
	return ""
}

// cidrProblem checks a CIDR without host bits.
func cidrProblem(v string) string {
	p, err := netip.ParsePrefix(v)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a CIDR such as 100.64.0.0/13", v)
	case p.Masked() != p:
		return fmt.Sprintf("%q has host bits set: use %s", v, p.Masked())
	}
	return ""
}

// ipProblem checks an IP address (without a zone).
func ipProblem(v string) string {
	if a, err := netip.ParseAddr(v); err != nil || a.Zone() != "" {
		return fmt.Sprintf("%q is not an IP address", v)
	}
	return ""
}

// oneOf checks that v is one of the values.
func oneOf(v string, values ...string) string {
	if slices.Contains(values, v) {
		return ""
	}
	return fmt.Sprintf("%q is not one of %s", v, strings.Join(values, ", "))
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// configBaseProblem checks the state store URL: file://, s3:// or gs://, printable, without characters shells
// and systemd interpret, no query or fragment.
func configBaseProblem(v string) string {
	u, err := url.Parse(v)
	bad := err != nil || !slices.Contains([]string{"file", "s3", "gs"}, u.Scheme) || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(v, " \t\r\n\"'`\\$?#") || systemdText(v) != nil
	for _, r := range v {
		bad = bad || r < 0x20 || r == 0x7f
	}
	if bad {
		return fmt.Sprintf("%q is not a state store URL: want file:///dir, s3://bucket/path or gs://bucket/path, without whitespace, quotes, backslashes, $, ? or #", v)
	}
	return ""
}
