package model

import (
	"strings"
	"testing"
)

func TestValidateLocalDNS(t *testing.T) {
	dns := func(d *LocalDNSSpec) func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
		return func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
			c.Spec.Local = &LocalSpec{DNS: d}
			return igs
		}
	}
	const secret = "c2VjcmV0LXRzaWcta2V5LWZvci1rdWJldXAtdGVzdHM="
	runValidateCases(t, []validateCase{
		{name: "zonefile by default"},
		{name: "zonefile", user: dns(&LocalDNSSpec{Provider: "zonefile"})},
		{name: "hosts, with the default hosts file", user: dns(&LocalDNSSpec{Provider: "hosts"})},
		{name: "hosts, with a hosts file", user: dns(&LocalDNSSpec{Provider: "hosts", HostsFile: "/run/kubeup/hosts"})},
		{
			name: "rfc2136, complete",
			user: dns(&LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.53:53", TSIGKeyName: "kubeup-key",
				TSIGAlgorithm: "hmac-sha512", TSIGSecretFile: "/etc/kubeup/tsig.secret"}),
		},
		{
			name: "rfc2136, a server by name and IPv6, a key name with a final dot",
			user: dns(&LocalDNSSpec{Provider: "rfc2136", Server: "ns1.example.com:5353", TSIGKeyName: "tsig_key.example.com.",
				TSIGSecretFile: "/etc/kubeup/tsig.secret"}),
		},
		{
			name: "rfc2136, an IPv6 server",
			user: dns(&LocalDNSSpec{Provider: "rfc2136", Server: "[2001:db8::53]:53", TSIGKeyName: "k",
				TSIGSecretFile: "/etc/kubeup/tsig.secret"}),
		},
		{
			name: "rfc2136 without its fields: each named",
			user: dns(&LocalDNSSpec{Provider: "rfc2136"}),
			want: []wantProblem{
				{"spec.local.dns.server", "required: the DNS server that takes the updates, want HOST:PORT"},
				{"spec.local.dns.tsigKeyName", "required: the name of the TSIG key"},
				{"spec.local.dns.tsigSecretFile", "required: the absolute path, on the control-plane nodes, of a file holding the TSIG key's secret in base64"},
			},
		},
		{
			name: "rfc2136 with invalid fields",
			user: dns(&LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1", TSIGKeyName: "-key", TSIGAlgorithm: "hmac-md5",
				TSIGSecretFile: "/etc/kubeup/../tsig"}),
			want: []wantProblem{
				{"spec.local.dns.server", `"127.0.0.1" is not an address: want HOST:PORT`},
				{"spec.local.dns.tsigKeyName", `"-key" is not a TSIG key name`},
				{"spec.local.dns.tsigAlgorithm", `"hmac-md5" is not a TSIG algorithm: want one of hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512`},
				{"spec.local.dns.tsigSecretFile", `"/etc/kubeup/../tsig" is not a clean path: use "/etc/tsig"`},
			},
		},
		{
			name: "rfc2136: a bad port, a bad host",
			user: dns(&LocalDNSSpec{Provider: "rfc2136", Server: "ns_1:053", TSIGKeyName: "k", TSIGSecretFile: "/etc/kubeup/k"}),
			want: []wantProblem{{"spec.local.dns.server", `"ns_1:053": "ns_1" is neither an IP address nor a DNS name`}},
		},
		{
			name: "rfc2136: port out of range",
			user: dns(&LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1:65536", TSIGKeyName: "k", TSIGSecretFile: "/etc/kubeup/k"}),
			want: []wantProblem{{"spec.local.dns.server", `"127.0.0.1:65536": "65536" is not a port (1-65535)`}},
		},
		{
			name: "rfc2136: the secret itself where its file belongs, never repeated",
			user: dns(&LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1:53", TSIGKeyName: "k", TSIGSecretFile: secret}),
			want: []wantProblem{{"spec.local.dns.tsigSecretFile", "is not an absolute path: give the path of a file on the control-plane nodes that holds the base64 secret, never the secret itself"}},
		},
		{
			name: "an unknown provider",
			user: dns(&LocalDNSSpec{Provider: "route53"}),
			want: []wantProblem{{"spec.local.dns.provider", `"route53" is not a DNS provider of the local cloud: want zonefile (spec.local.zoneFile), hosts or rfc2136`}},
		},
		{
			name: "fields of another provider",
			user: dns(&LocalDNSSpec{Provider: "hosts", HostsFile: "hosts", Server: "127.0.0.1:53", TSIGSecretFile: "/etc/kubeup/k"}),
			want: []wantProblem{
				{"spec.local.dns.server", "is a field of provider rfc2136, and provider is hosts: remove it, or set spec.local.dns.provider: rfc2136"},
				{"spec.local.dns.tsigSecretFile", "is a field of provider rfc2136, and provider is hosts"},
				{"spec.local.dns.hostsFile", `"hosts" must be an absolute path`},
			},
		},
		{
			name: "zonefile with a hosts file",
			user: dns(&LocalDNSSpec{HostsFile: "/etc/hosts"}),
			want: []wantProblem{{"spec.local.dns.hostsFile", "is a field of provider hosts, and provider is zonefile: remove it, or set spec.local.dns.provider: hosts"}},
		},
		{
			name:     "no provider in a complete spec",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.Local.DNS.Provider = "" },
			want:     []wantProblem{{"spec.local.dns.provider", "required: zonefile (spec.local.zoneFile), hosts or rfc2136"}},
		},
	})
}

// TestValidateLocalDNSNeverPrintsTheSecret checks that a secret written where its file's path belongs is in no
// problem: validation errors are printed and logged.
func TestValidateLocalDNSNeverPrintsTheSecret(t *testing.T) {
	for _, secret := range []string{"c2VjcmV0LXRzaWcta2V5LWZvci1rdWJldXAtdGVzdHM=", "c2VjcmV0/dGVzdHM+a2V5"} {
		c, igs := userSpec(t, CloudLocal, 1)
		c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.1:53", TSIGKeyName: "k", TSIGSecretFile: secret}}
		c, igs = Complete(c, igs)
		err := Validate("cluster.yaml", c, igs)
		if err == nil {
			t.Fatalf("a secret as tsigSecretFile was accepted")
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

// A secret pasted into tsigKeyName or server (or into their host or port part) is in no problem either: the
// value is named as not shown (it was quoted whole).
func TestValidateLocalDNSRedactsSecretsInOtherFields(t *testing.T) {
	const secret = "c2VjcmV0LXRzaWcta2V5LWZvci1rdWJldXAtdGVzdHM="
	for _, tc := range []struct{ field, server, key string }{
		{"tsigKeyName", "127.0.0.1:53", secret},
		{"tsigKeyName", "127.0.0.1:53", `"` + secret + `";`},
		{"server", secret, "k"},
		{"server", secret + ":53", "k"},
		{"server", "127.0.0.1:" + secret, "k"},
	} {
		c, igs := userSpec(t, CloudLocal, 1)
		c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "rfc2136", Server: tc.server, TSIGKeyName: tc.key, TSIGSecretFile: "/etc/kubeup/tsig"}}
		c, igs = Complete(c, igs)
		err := Validate("cluster.yaml", c, igs)
		if err == nil || !strings.Contains(err.Error(), "spec.local.dns."+tc.field+": the value (not shown: it looks like a base64 secret") {
			t.Errorf("server %q, tsigKeyName %q: %v, want a problem of %s that does not show the value", tc.server, tc.key, err, tc.field)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

// A local instance group's machineType and image would do nothing: any value but the provider's own is refused
// (they were accepted and ignored).
func TestValidateLocalInstanceGroupRefusesMachineTypeAndImage(t *testing.T) {
	c, igs := userSpec(t, CloudLocal, 1)
	nodes := igs[len(igs)-1]
	nodes.Spec.MachineType, nodes.Spec.Image = "e2-standard-4", "ubuntu-24.04"
	c, igs = Complete(c, igs)
	err := Validate("cluster.yaml", c, igs)
	for _, want := range []string{
		"instancegroup/" + nodes.Metadata.Name + `: spec.machineType: "e2-standard-4": the local provider makes no machines`,
		"instancegroup/" + nodes.Metadata.Name + `: spec.image: "ubuntu-24.04": the local provider makes no machines`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
	c, igs = userSpec(t, CloudLocal, 1)
	c, igs = Complete(c, igs)
	if err := Validate("cluster.yaml", c, igs); err != nil {
		t.Errorf("the defaults are refused: %v", err)
	}
}

// TestProtokubeConfigCarriesLocalDNS checks that protokube gets the DNS provider of the spec, with its defaults.
func TestProtokubeConfigCarriesLocalDNS(t *testing.T) {
	c, igs := userSpec(t, CloudLocal, 3)
	c.Spec.Local = &LocalSpec{DNS: &LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.53:53", TSIGKeyName: "kubeup-key",
		TSIGSecretFile: "/etc/kubeup/tsig.secret"}}
	c, igs = Complete(c, igs)
	if err := Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	nc := NewNodeConfig(c, group(igs, "control-plane-b"))
	want := LocalDNSSpec{Provider: "rfc2136", Server: "127.0.0.53:53", TSIGKeyName: "kubeup-key", TSIGAlgorithm: "hmac-sha256",
		TSIGSecretFile: "/etc/kubeup/tsig.secret"}
	if nc.Protokube == nil || nc.Protokube.Local == nil || nc.Protokube.Local.DNS == nil || *nc.Protokube.Local.DNS != want {
		t.Fatalf("protokube's configuration: %+v, want local.dns %+v", nc.Protokube, want)
	}
	// What nodeup reads back, it validates: the DNS provider survives the round trip.
	obj, err := nc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeNodeConfigObject("conf", obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := *back.Protokube.Local.DNS; got != want {
		t.Errorf("after Encode and Decode: %+v, want %+v", got, want)
	}
}
