package model

import (
	"encoding/base64"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func init() {
	cloudModels[CloudLocal] = cloudModel{
		complete:    completeLocal,
		machineType: LocalMachineType, image: LocalImage, volumeType: "sparse",
		validate:              validateLocal,
		validateInstanceGroup: func(ps *problems, _ *Cluster, ig *InstanceGroup) { validateLocalInstanceGroup(ps, ig) },
		volumeTypes:           []string{"sparse"},
		memberNames: func(name string, e EtcdClusterSpec, m EtcdMemberSpec) []derived {
			return []derived{{"volume of etcd member " + m.Name + " of " + e.Name,
				EtcdVolumeName(name, e, m), maxLocalVolumeName, "the local provider's volumes take"}}
		},
		createFlags: func(NewClusterOptions) []createFlag { return nil },
	}
}

// validateLocal checks spec.local: the pool, the zone file and the DNS provider.
func validateLocal(ps *problems, s *ClusterSpec) {
	if s.Local == nil {
		ps.add("spec.local", "required for cloudProvider local: poolDir and zoneFile")
		return
	}
	for _, f := range []struct{ field, v string }{{"poolDir", s.Local.PoolDir}, {"zoneFile", s.Local.ZoneFile}} {
		field, v := f.field, f.v
		if v == "" {
			ps.add("spec.local."+field, "required when the state store is not file:// (an absolute path)")
			continue
		}
		validatePath(ps, "spec.local."+field, v, true)
		if pathProblem(v) == "" {
			check(ps, "spec.local."+field, hostPathProblem(v))
		}
	}
	validateLocalDNS(ps, s.Local.DNS)
}

// validateLocalInstanceGroup refuses what a local instance group cannot do: the local provider makes no machines
// (nodeup converges the machines the operator runs, whatever they are), so a machine type or an image other than
// the defaults would be accepted and do nothing.
func validateLocalInstanceGroup(ps *problems, ig *InstanceGroup) {
	p := igPrefix(ig.Metadata.Name)
	if s := ig.Spec.MachineType; s != "" && s != LocalMachineType {
		ps.add(p+"spec.machineType", "%s: the local provider makes no machines (nodeup converges the ones you run), so a machine type would do nothing: remove the field (its value on local is %s)",
			shown(s), LocalMachineType)
	}
	if s := ig.Spec.Image; s != "" && s != LocalImage {
		ps.add(p+"spec.image", "%s: the local provider makes no machines (nodeup converges the ones you run, whatever their OS), so an image would do nothing: remove the field (its value on local is %s)",
			shown(s), LocalImage)
	}
}

// tsigAlgorithms are the TSIG algorithms an RFC 2136 server is signed for (RFC 8945), strongest last. hmac-md5
// is left out: it is deprecated.
var tsigAlgorithms = []string{"hmac-sha1", "hmac-sha224", "hmac-sha256", "hmac-sha384", "hmac-sha512"}

// tsigKeyLabel is one label of a TSIG key's name: BIND's key names (kubeup-key, tsig.example.com) are domain
// names, and '_' is common in them.
var tsigKeyLabel = regexp.MustCompile(`^[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?$`)

// validateLocalDNS checks spec.local.dns of a complete spec: the provider, its fields, and no field of another
// provider (it would be silently unused).
func validateLocalDNS(ps *problems, d *LocalDNSSpec) {
	const p = "spec.local.dns"
	if d == nil {
		ps.add(p, "required: a provider (zonefile, hosts or rfc2136)")
		return
	}
	providers := []string{LocalDNSZoneFile, LocalDNSHosts, LocalDNSRFC2136}
	switch {
	case d.Provider == "":
		ps.add(p+".provider", "required: zonefile (spec.local.zoneFile), hosts or rfc2136")
		return
	case !slices.Contains(providers, d.Provider):
		ps.add(p+".provider", "%q is not a DNS provider of the local cloud: want zonefile (spec.local.zoneFile), hosts or rfc2136", d.Provider)
		return
	}
	// Each field belongs to one provider; one set under another provider is a mistake to name, not to ignore.
	for _, f := range []struct {
		field, provider string
		set             bool
	}{
		{"hostsFile", LocalDNSHosts, d.HostsFile != ""},
		{"server", LocalDNSRFC2136, d.Server != ""},
		{"tsigKeyName", LocalDNSRFC2136, d.TSIGKeyName != ""},
		{"tsigAlgorithm", LocalDNSRFC2136, d.TSIGAlgorithm != ""},
		{"tsigSecretFile", LocalDNSRFC2136, d.TSIGSecretFile != ""},
	} {
		if f.set && f.provider != d.Provider {
			ps.add(p+"."+f.field, "is a field of provider %s, and provider is %s: remove it, or set %s.provider: %s", f.provider, d.Provider, p, f.provider)
		}
	}
	switch d.Provider {
	case LocalDNSHosts:
		// The one file of the system kubeup edits: only its managed block (localtasks.HostsFile keeps every other
		// byte as it was), never replaced.
		if d.HostsFile != DefaultHostsFile {
			validateNodePath(ps, p+".hostsFile", d.HostsFile, true)
		}
	case LocalDNSRFC2136:
		check(ps, p+".server", dnsServerProblem(d.Server))
		check(ps, p+".tsigKeyName", tsigKeyNameProblem(d.TSIGKeyName))
		switch {
		case d.TSIGAlgorithm == "":
			ps.add(p+".tsigAlgorithm", "required: one of %s (the key's algorithm in the server's configuration)", strings.Join(tsigAlgorithms, ", "))
		case !slices.Contains(tsigAlgorithms, d.TSIGAlgorithm):
			ps.add(p+".tsigAlgorithm", "%q is not a TSIG algorithm: want one of %s", d.TSIGAlgorithm, strings.Join(tsigAlgorithms, ", "))
		}
		switch {
		case d.TSIGSecretFile == "":
			ps.add(p+".tsigSecretFile", "required: the absolute path, on the control-plane nodes, of a file holding the TSIG key's secret in base64")
		case !strings.HasPrefix(d.TSIGSecretFile, "/"):
			// Not quoted: it may be the secret itself, which must not reach a log.
			ps.add(p+".tsigSecretFile", "is not an absolute path: give the path of a file on the control-plane nodes that holds the base64 secret, never the secret itself (the spec is stored, printed and copied to every node)")
		case pathProblem(d.TSIGSecretFile) != "" && isBase64(d.TSIGSecretFile):
			// Not quoted either: a base64 secret may start with '/' (and end in '=', which no path holds).
			ps.add(p+".tsigSecretFile", "is not a clean absolute path of letters, digits and %s (not shown: it may be the secret itself): give the path of a file on the control-plane nodes that holds the base64 secret, never the secret itself",
				strings.Join(strings.Split(pathChars, ""), " "))
		case pathProblem(d.TSIGSecretFile) != "":
			validatePath(ps, p+".tsigSecretFile", d.TSIGSecretFile, true)
		case nodePathProblem(d.TSIGSecretFile) != "":
			// Not quoted either: a base64 secret without padding passes for a clean path.
			ps.add(p+".tsigSecretFile", "is not in a directory kubeup owns on a node (not shown: it may be the secret itself): give the path of a file in %s that holds the base64 secret, never the secret itself",
				dirList(SpecNodeDirs))
		}
	}
}

// dnsServerProblem checks a DNS server's address: HOST:PORT, HOST an IP address ([IPv6]) or a DNS name.
func dnsServerProblem(server string) string {
	const want = "want HOST:PORT, HOST an IP address ([IPv6] in brackets) or a DNS name, for example 192.0.2.53:53"
	if server == "" {
		return "required: the DNS server that takes the updates, " + want
	}
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return shown(server) + " is not an address: " + want
	}
	if secretLike(host) || secretLike(port) {
		return notShown + " is not an address: " + want
	}
	if !hostOK(host) {
		return shown(server) + ": " + strconv.Quote(host) + " is neither an IP address nor a DNS name: " + want
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return shown(server) + ": " + strconv.Quote(port) + " is not a port (1-65535): " + want
	}
	return ""
}

// tsigKeyNameProblem checks a TSIG key's name: a domain name (labels of letters, digits, '-' and '_'), with or
// without the final dot.
func tsigKeyNameProblem(name string) string {
	if name == "" {
		return "required: the name of the TSIG key, as the server's configuration names it (key \"NAME\" { ... } in BIND)"
	}
	trimmed := strings.TrimSuffix(name, ".")
	if len(trimmed) > 253 {
		return shown(name) + " is longer than 253 characters"
	}
	for _, l := range strings.Split(trimmed, ".") {
		if !tsigKeyLabel.MatchString(l) {
			return shown(name) + " is not a TSIG key name: dot-separated labels of 1-63 letters, digits, '-' or '_', not starting or ending with '-' (for example kubeup-key)"
		}
	}
	return ""
}

// shown is a value as a problem quotes it, unless it looks like a secret pasted in the wrong field (a TSIG
// secret in tsigKeyName or server): a problem is printed and logged, and must not carry it.
func shown(v string) string {
	if secretLike(v) {
		return notShown
	}
	return strconv.Quote(v)
}

const notShown = "the value (not shown: it looks like a base64 secret, which the spec must never hold)"

// secretLike reports whether v looks like a base64 secret, as a TSIG key's (BIND's secret "..."; quotes and a
// final ';' pasted with it): 16 characters or more that decode as base64, with or without padding. A name of
// 16 letters and digits decodes too; it is then not quoted, which costs only the echo of a wrong value.
func secretLike(v string) bool {
	v = strings.Trim(strings.TrimSpace(v), `";`)
	if len(v) < 16 {
		return false
	}
	if isBase64(v) {
		return true
	}
	_, err := base64.RawStdEncoding.DecodeString(v)
	return err == nil
}

// isBase64 reports whether s decodes as standard base64, as a TSIG secret does.
func isBase64(s string) bool {
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}
