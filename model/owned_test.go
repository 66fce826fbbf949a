package model

import (
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Where a path field of the spec points: a node's filesystem (nodeup and protokube write or read it under the
// node's root), or the local provider's host (kubeup and protokube keep the volume pool and the zone file there).
const (
	onNode = "node"
	onHost = "host"
)

// specPathFields are the spec's fields that name a file or a directory, and where. TestSpecPathFieldsAreListed
// holds it to the spec's types: a new field that looks like a path must be listed here or in specNotPaths.
var specPathFields = map[string]string{
	"spec.kubelet.kubeconfig":                                         onNode,
	"spec.kubelet.podManifestPath":                                    onNode,
	"spec.kubelet.clientCAFile":                                       onNode,
	"spec.kubeAPIServer.clientCAFile":                                 onNode,
	"spec.kubeAPIServer.tlsCertFile":                                  onNode,
	"spec.kubeAPIServer.tlsPrivateKeyFile":                            onNode,
	"spec.kubeAPIServer.serviceAccountKeyFile":                        onNode,
	"spec.kubeAPIServer.serviceAccountSigningKeyFile":                 onNode,
	"spec.kubeAPIServer.etcdCAFile":                                   onNode,
	"spec.kubeAPIServer.etcdCertFile":                                 onNode,
	"spec.kubeAPIServer.etcdKeyFile":                                  onNode,
	"spec.kubeAPIServer.kubeletClientCertificate":                     onNode,
	"spec.kubeAPIServer.kubeletClientKey":                             onNode,
	"spec.kubeAPIServer.requestheaderClientCAFile":                    onNode,
	"spec.kubeAPIServer.proxyClientCertFile":                          onNode,
	"spec.kubeAPIServer.proxyClientKeyFile":                           onNode,
	"spec.kubeControllerManager.kubeconfig":                           onNode,
	"spec.kubeControllerManager.serviceAccountPrivateKeyFile":         onNode,
	"spec.kubeControllerManager.rootCAFile":                           onNode,
	"spec.kubeControllerManager.clusterSigningKubeletClientCertFile":  onNode,
	"spec.kubeControllerManager.clusterSigningKubeletClientKeyFile":   onNode,
	"spec.kubeControllerManager.clusterSigningKubeletServingCertFile": onNode,
	"spec.kubeControllerManager.clusterSigningKubeletServingKeyFile":  onNode,
	"spec.kubeAPIServer.kubeletCertificateAuthority":                  onNode,
	"spec.kubelet.bootstrapKubeconfig":                                onNode,
	"spec.kubelet.certDir":                                            onNode,
	"spec.kubeScheduler.kubeconfig":                                   onNode,
	"spec.kubeProxy.kubeconfig":                                       onNode,
	"spec.local.dns.hostsFile":                                        onNode,
	"spec.local.dns.tsigSecretFile":                                   onNode,
	"spec.local.poolDir":                                              onHost,
	"spec.local.zoneFile":                                             onHost,
}

// specNotPaths are the fields that look like paths (by name or value) but name no file kubeup or a component
// writes or reads, and why.
var specNotPaths = map[string]string{
	"spec.configBase":                           "the state store's URL, which kubeup sets itself from --state; nodes read the store only through their --conf",
	"spec.kubelet.containerRuntimeEndpoint":     "the CRI socket kubelet connects to (unix://...): containerd makes it, nothing is written there",
	"spec.kubeAPIServer.etcdServersOverrides[]": "/group/resource#URL: the leading / is the resource's API group's, not a path",
}

// looksLikePath says, by its JSON name, that a field may name a file.
var looksLikePath = regexp.MustCompile(`^kubeconfig$|[a-z](File|Path|Dir|Kubeconfig|Certificate|Key|Socket|Endpoint)(\[\])?$`)

// stringFields lists the JSON paths of every string and []string field under t (a list's elements as []).
func stringFields(prefix string, t reflect.Type, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		*out = append(*out, prefix)
	case reflect.Slice:
		stringFields(prefix+"[]", t.Elem(), out)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			stringFields(prefix+"."+name, f.Type, out)
		}
	}
}

// pathLikeValues lists the JSON paths of the string values in v (a list's elements as []) that look like paths: they
// start with "/" or hold ":///".
func pathLikeValues(prefix string, v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			pathLikeValues(prefix+"."+k, e, out)
		}
	case []any:
		for _, e := range v {
			pathLikeValues(prefix+"[]", e, out)
		}
	case string:
		if strings.HasPrefix(v, "/") || strings.Contains(v, ":///") {
			out[prefix] = true
		}
	}
}

// providerSpec is a complete spec and its instance groups.
type providerSpec struct {
	c   *Cluster
	igs []*InstanceGroup
}

// everyProviderSpec returns a complete spec of each provider, and of each DNS provider of the local one: between
// them, every field a spec defaults.
func everyProviderSpec(t *testing.T) map[string]providerSpec {
	t.Helper()
	out := map[string]providerSpec{}
	for _, cloud := range []string{CloudAWS, CloudGCE} {
		c, igs := completeSpec(t, cloud, 1)
		out[cloud] = providerSpec{c, igs}
	}
	for _, dns := range []*LocalDNSSpec{
		{Provider: LocalDNSZoneFile},
		{Provider: LocalDNSHosts},
		{Provider: LocalDNSRFC2136, Server: "192.0.2.53:53", TSIGKeyName: "kubeup", TSIGSecretFile: "/etc/kubeup/tsig.secret"},
	} {
		c, igs := userSpec(t, CloudLocal, 1)
		c.Spec.Local = &LocalSpec{DNS: dns}
		c, igs = Complete(c, igs)
		if err := Validate("test", c, igs); err != nil {
			t.Fatalf("the local spec with DNS provider %s: %v", dns.Provider, err)
		}
		out["local-"+dns.Provider] = providerSpec{c, igs}
	}
	return out
}

// TestSpecPathFieldsAreListed finds the spec's fields that may name a file, by their names in the API types and
// by their values in complete specs of every provider, and requires each to be in specPathFields (so that
// TestSpecPathsStayInOwnedDirs holds it to kubeup's directories) or in specNotPaths with a reason.
func TestSpecPathFieldsAreListed(t *testing.T) {
	found := map[string]bool{}
	var fields []string
	stringFields("spec", reflect.TypeOf(ClusterSpec{}), &fields)
	for _, f := range fields {
		last := f[strings.LastIndex(f, ".")+1:]
		if looksLikePath.MatchString(last) {
			found[f] = true
		}
	}
	for name, ps := range everyProviderSpec(t) {
		js, err := json.Marshal(ps.c.Spec)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			t.Fatal(err)
		}
		byValue := map[string]bool{}
		pathLikeValues("spec", v, byValue)
		for f := range byValue {
			if !slices.Contains(fields, f) {
				t.Errorf("spec %s: %s is not a string field of the API types", name, f)
			}
			found[f] = true
		}
	}
	for _, f := range slices.Sorted(maps.Keys(found)) {
		_, isPath := specPathFields[f]
		_, notPath := specNotPaths[f]
		if !isPath && !notPath {
			t.Errorf("%s may name a file: list it in specPathFields (and hold it to kubeup's directories) or, with a reason, in specNotPaths", f)
		}
	}
	for f := range specPathFields {
		if !slices.Contains(fields, f) {
			t.Errorf("specPathFields names %s, which is not a string field of the spec", f)
		}
	}
}

// systemPaths are files and directories of the system that no spec field may name, nor make nodeup write.
var systemPaths = []string{
	"/etc/shadow",
	"/etc/passwd",
	"/root/.ssh/authorized_keys",
	"/usr/bin/env",
	"/etc/systemd/system",
	"/etc/systemd/system/kubelet.service",
	"/etc/ssh/ssh_host_ed25519_key",
	"/etc/sudoers.d/kubeup",
	"/var/lib/dpkg/status",
	"/boot/vmlinuz",
	"/home/admin/.bashrc",
}

// setJSONField sets the field at path (spec.a.b) of c to v, through c's JSON.
func setJSONField(t *testing.T, c *Cluster, path, v string) {
	t.Helper()
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(path, ".")
	m := obj
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	if js, err = json.Marshal(obj); err != nil {
		t.Fatal(err)
	}
	*c = Cluster{}
	if err := json.Unmarshal(js, c); err != nil {
		t.Fatal(err)
	}
}

// TestSpecPathsStayInOwnedDirs points every path field of the spec at files and directories of the system, and
// requires validation to refuse each at the field's path, saying where paths may point.
func TestSpecPathsStayInOwnedDirs(t *testing.T) {
	specs := everyProviderSpec(t)
	for _, field := range slices.Sorted(maps.Keys(specPathFields)) {
		base := "local-" + LocalDNSZoneFile
		switch field {
		case "spec.local.dns.hostsFile":
			base = "local-" + LocalDNSHosts
		case "spec.local.dns.tsigSecretFile":
			base = "local-" + LocalDNSRFC2136
		}
		for _, p := range systemPaths {
			t.Run(field+"="+p, func(t *testing.T) {
				c := DeepCopy(specs[base].c)
				setJSONField(t, c, field, p)
				err := Validate("cluster demo.example.com", c, specs[base].igs)
				var at []Problem
				for _, pr := range problemsOf(t, err) {
					if pr.Path == field {
						at = append(at, pr)
					}
				}
				want := "not in a directory kubeup owns on a node: give a path in /etc/kubernetes/, /etc/kubeup/"
				if field == "spec.local.dns.tsigSecretFile" {
					want = "not in a directory kubeup owns on a node (not shown: it may be the secret itself): give the path of a file in /etc/kubernetes/, /etc/kubeup/"
					if len(at) > 0 && strings.Contains(at[0].Message, p) {
						t.Errorf("%s: the message quotes the value, which may be the secret: %s", field, at[0].Message)
					}
				}
				if specPathFields[field] == onHost {
					want = ": keep it beside the state store (the default) or in /var/lib/kubeup"
				}
				if len(at) == 0 || !strings.Contains(at[0].Message, want) {
					t.Errorf("%s: %q: problems %v, want one at %s saying %q", field, p, problemsOf(t, err), field, want)
				}
			})
		}
	}
}

// TestSpecPathsInOwnedDirs: paths in kubeup's directories pass, the hosts file may be /etc/hosts (a managed block
// of it is edited, never the rest), and the host's paths may be anywhere outside the system's directories.
func TestSpecPathsInOwnedDirs(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "keys in /etc/kubernetes/pki", complete: func(c *Cluster, _ []*InstanceGroup) {
			c.Spec.KubeAPIServer.TLSPrivateKeyFile = "/etc/kubernetes/pki/apiserver.key"
			c.Spec.KubeAPIServer.TLSCertFile = "/etc/kubernetes/pki/apiserver.crt"
		}},
		{name: "the hosts file /etc/hosts", user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
			c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: LocalDNSHosts, HostsFile: "/etc/hosts"}}
			return igs
		}},
		{name: "the pool and the zone file in /var/lib/kubeup and /srv", user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
			c.Spec.Local = &LocalSpec{PoolDir: "/var/lib/kubeup/pool", ZoneFile: "/srv/dns/example.com.zone"}
			return igs
		}},
		{
			name: "node.conf, the static pods' directory, kubeup's state",
			complete: func(c *Cluster, _ []*InstanceGroup) {
				c.Spec.KubeAPIServer.TLSCertFile = "/etc/kubeup/node.conf"
				c.Spec.KubeAPIServer.TLSPrivateKeyFile = "/etc/kubernetes/manifests/server.key"
				c.Spec.KubeAPIServer.ClientCAFile = "/var/lib/kubeup/systemd/ca.crt"
			},
			want: []wantProblem{
				{"spec.kubeAPIServer.clientCAFile", `"/var/lib/kubeup/systemd/ca.crt" is not in a directory kubeup owns on a node`},
				{"spec.kubeAPIServer.tlsCertFile", `"/etc/kubeup/node.conf" is a file kubeup writes itself`},
				{"spec.kubeAPIServer.tlsPrivateKeyFile", `"/etc/kubernetes/manifests/server.key" is in spec.kubelet.podManifestPath /etc/kubernetes/manifests, where kubelet reads every file as a static pod`},
			},
		},
	})
}
