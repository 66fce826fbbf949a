package model

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
)

// fuzzKeyPEM stands for a private key in the seeds' node configurations: RedactNodeConfigObject must never show it.
const fuzzKeyPEM = "-----BEGIN PRIVATE KEY-----\n" + fuzzKeyBody + "\n-----END PRIVATE KEY-----\n"

// fuzzKeyBody is the base64 body of fuzzKeyPEM.
const fuzzKeyBody = "U0VOVElORUwtbm9kZS1rZXk="

// FuzzNodeConfig feeds any YAML to what nodeup does with its configuration (DecodeNodeConfigObject), and to what
// a plan shows of one (RedactNodeConfigObject). withSum puts the sha256 of body on the first line, as Encode
// does, so that the fuzzer reaches the decoder and the validation; without it, body is the whole object.
// Properties:
//   - nothing panics;
//   - an error is a *NodeConfigSumError, an *InvalidError whose every problem names a field path, or an error
//     naming the source;
//   - a configuration nodeup accepts holds what kubeup derives from its cluster and instance group: protokube's
//     configuration exactly (none for a Node group), and files at paths kubeup writes for the role, with their
//     mode and Sensitive flag, each path once (the contents cannot be derived: any are accepted);
//   - a configuration nodeup accepts, Encode writes back to an object that decodes to the same configuration,
//     byte for byte the same when encoded again;
//   - RedactNodeConfigObject shows every file the rule calls secret (NodeFile.secret: Sensitive, a mode without
//     access for group and others or one that does not parse, or contents holding a key or a token) as
//     (sensitive), keeps the others' contents, and never shows a private key's PEM that only a secret file holds.
func FuzzNodeConfig(f *testing.F) {
	for _, cloud := range []string{CloudLocal, CloudAWS, CloudGCE} {
		c, igs := completeSpec(f, cloud, 3)
		for _, ig := range []*InstanceGroup{igs[0], findInstanceGroup(igs, "nodes")} {
			nc := NewNodeConfig(c, ig)
			if err := nc.AddKeystoreFiles(Issued{}); err != nil {
				f.Fatal(err)
			}
			for i := range nc.Files {
				nc.Files[i].Contents = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"
				if nc.Files[i].Sensitive {
					nc.Files[i].Contents = fuzzKeyPEM
				}
			}
			body, _, err := nc.Marshal()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(body, true)
			// The same without the flag, or with the mode of a certificate: refused, and still redacted.
			nc.Files[1].Sensitive = false
			if body, _, err = nc.Marshal(); err != nil {
				f.Fatal(err)
			}
			f.Add(body, true)
			nc.Files[1].Sensitive, nc.Files[1].Mode = true, "0644"
			if body, _, err = nc.Marshal(); err != nil {
				f.Fatal(err)
			}
			f.Add(body, true)
		}
	}
	f.Add([]byte(""), true)
	f.Add([]byte("apiVersion: kubeup.dev/v1alpha1\nkind: NodeConfig\n"), true)
	f.Add([]byte("# sha256:00\nkind: NodeConfig\n"), false)
	f.Add([]byte("files:\n- {path: /k, mode: '0600', contents: x, sensitive: true}\n"), true)
	f.Add([]byte("files:\n- {path: /k, mode: '0644', contents: \"client-key-data: eA==\"}\n- {path: /c, mode: '0644', contents: x}\n"), true)
	f.Add([]byte("files:\n- {path: /k, mode: '0600', contents: x}\n- {path: /m, mode: 'rw', contents: y}\n"), true)
	f.Fuzz(func(t *testing.T, body []byte, withSum bool) {
		obj := body
		if withSum {
			obj = append([]byte(nodeConfigSumPrefix+sha256Hex(body)+"\n"), body...)
		}
		checkRedacted(t, obj)
		nc, err := DecodeNodeConfigObject("conf", obj, nil)
		if err != nil {
			checkNodeConfigError(t, err)
			return
		}
		checkDerivedHeld(t, nc)
		written, err := nc.Encode()
		if err != nil {
			t.Fatalf("encoding a configuration nodeup accepted: %v", err)
		}
		again, err := DecodeNodeConfigObject("written", written, nil)
		if err != nil {
			t.Fatalf("the configuration as written is refused: %v\nread:\n%q\nwritten:\n%s", err, obj, written)
		}
		if diff := cmp.Diff(nc, again); diff != "" {
			t.Fatalf("the configuration as written decodes to another (-read +written):\n%s", diff)
		}
		if twice, err := again.Encode(); err != nil || !bytes.Equal(written, twice) {
			t.Fatalf("writing the configuration again gives other bytes (%v):\nfirst:\n%s\nsecond:\n%s", err, written, twice)
		}
	})
}

// checkDerivedHeld fails unless nc, a configuration DecodeNodeConfigObject accepted, holds what kubeup derives
// from its cluster and instance group (compared here as kubeup writes it: protokube's configuration through
// Marshal, the files by path).
func checkDerivedHeld(t *testing.T, nc *NodeConfig) {
	t.Helper()
	want := NewNodeConfig(nc.Cluster, nc.InstanceGroup)
	if err := want.AddKeystoreFiles(Issued{}); err != nil {
		t.Fatalf("the files of an accepted configuration: %v", err)
	}
	wantJS, err := yaml.Marshal(want.Protokube)
	if err != nil {
		t.Fatal(err)
	}
	gotJS, err := yaml.Marshal(nc.Protokube)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantJS), string(gotJS)); diff != "" {
		t.Fatalf("accepted a protokube configuration kubeup does not write (-kubeup's +accepted):\n%s", diff)
	}
	byPath := map[string]NodeFile{}
	for _, f := range want.Files {
		byPath[f.Path] = f
	}
	seen := map[string]bool{}
	for i, f := range nc.Files {
		w, ok := byPath[f.Path]
		if !ok || seen[f.Path] || w.Mode != f.Mode || w.Sensitive != f.Sensitive {
			t.Fatalf("accepted files[%d] %q mode %q sensitive %t: kubeup writes %+v (given before: %t)", i, f.Path, f.Mode, f.Sensitive, w, seen[f.Path])
		}
		seen[f.Path] = true
	}
}

// checkNodeConfigError fails unless err is one of the errors DecodeNodeConfigObject documents.
func checkNodeConfigError(t *testing.T, err error) {
	t.Helper()
	var sum *NodeConfigSumError
	if errors.As(err, &sum) {
		return
	}
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		for _, p := range invalid.Problems {
			if strings.TrimSpace(p.Path) == "" || strings.TrimSpace(p.Message) == "" {
				t.Fatalf("a problem without a field path or a message: %#v in\n%v", p, err)
			}
		}
		return
	}
	if !strings.HasPrefix(err.Error(), "conf: ") {
		t.Fatalf("error %q does not name the configuration", err)
	}
}

// checkRedacted runs RedactNodeConfigObject on obj and checks what it shows.
func checkRedacted(t *testing.T, obj []byte) {
	t.Helper()
	shown, err := RedactNodeConfigObject(string(obj))
	if err != nil {
		// (An object of a few bytes may be a word of the message.)
		if strings.Contains(err.Error(), "PRIVATE KEY") || len(obj) >= 16 && strings.Contains(err.Error(), string(obj)) {
			t.Fatalf("the error quotes the object: %v", err)
		}
		return
	}
	var in, out NodeConfig
	_, rest, _ := strings.Cut(string(obj), "\n")
	if err := yaml.Unmarshal([]byte(rest), &in); err != nil {
		t.Fatalf("RedactNodeConfigObject showed an object whose YAML does not decode: %v", err)
	}
	first, shownRest, _ := strings.Cut(shown, "\n")
	if want, _, _ := strings.Cut(string(obj), "\n"); first != want {
		t.Fatalf("the first line shown is %q, want %q", first, want)
	}
	if err := yaml.Unmarshal([]byte(shownRest), &out); err != nil {
		t.Fatalf("what RedactNodeConfigObject shows does not decode: %v\n%s", err, shown)
	}
	if len(in.Files) != len(out.Files) {
		t.Fatalf("%d files shown, the object has %d", len(out.Files), len(in.Files))
	}
	redacted := in
	redacted.Files = nil
	for i, f := range in.Files {
		want := f
		if f.secret() {
			want.Contents = engine.Redacted
		}
		if diff := cmp.Diff(want, out.Files[i]); diff != "" {
			t.Fatalf("file %d as shown (-want +got):\n%s", i, diff)
		}
		redacted.Files = append(redacted.Files, want)
	}
	// The PEM is shown only where a field that is not a secret file's contents holds it.
	elsewhere, err := yaml.Marshal(&redacted)
	if err != nil {
		t.Fatal(err)
	}
	for _, pem := range []string{fuzzKeyBody, "PRIVATE KEY"} {
		if n, want := strings.Count(shown, pem), strings.Count(first+"\n"+string(elsewhere), pem); n > want {
			t.Fatalf("%q is shown %d times, %d outside the sensitive files:\n%s", pem, n, want, shown)
		}
	}
}

// TestDecodeNodeConfigNotAMapping: a configuration whose YAML is a scalar or a list (found by FuzzNodeConfig) was
// refused with a problem without a field path ("conf: must be a mapping, not the number 0"). It says what a node
// configuration is.
func TestDecodeNodeConfigNotAMapping(t *testing.T) {
	for body, kind := range map[string]string{"0\n": "the number 0", "[a]\n": "a list", "": "null", "x\n": `the string "x"`} {
		obj := []byte(nodeConfigSumPrefix + sha256Hex([]byte(body)) + "\n" + body)
		_, err := DecodeNodeConfigObject("conf", obj, nil)
		want := "conf: a node configuration is a mapping of apiVersion, kind, cluster and instanceGroup, not " + kind
		if err == nil || err.Error() != want {
			t.Errorf("body %q: error %v, want %q", body, err, want)
		}
	}
}

// TestEncodedKind: the kind RedactNodeConfigObject reads without decoding is the top-level kind line Encode
// writes, and only that: a kind nested or continued (indented), quoted, unknown or given twice leaves it to the
// YAML's decode.
func TestEncodedKind(t *testing.T) {
	rc, err := (&NodeRoleConfig{APIVersion: APIVersion, Kind: KindNodeRoleConfig, Role: "Node"}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := (&NodeConfig{APIVersion: APIVersion, Kind: KindNodeConfig, InstanceGroup: &InstanceGroup{}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ doc, want string }{
		{string(rc), KindNodeRoleConfig},
		{string(nc), KindNodeConfig},
		{"a: 1\nkind: NodeRoleConfig\r\nb: 2\n", KindNodeRoleConfig},
		{"a:\n  kind: NodeRoleConfig\nkind: NodeConfig\n", KindNodeConfig},
		{"a:\n  kind: NodeRoleConfig\n", ""},
		{"kind: 'NodeRoleConfig'\n", ""},
		{"kind: Cluster\n", ""},
		{"kind:NodeConfig\n", ""},
		{"kind: NodeConfig\nkind: NodeRoleConfig\n", ""},
		{"kind: NodeConfig # a comment\n", ""},
	} {
		if got := encodedKind(tt.doc); got != tt.want {
			t.Errorf("encodedKind(%q) = %q, want %q", tt.doc, got, tt.want)
		}
		if tt.want == "" {
			continue
		}
		var decoded struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(tt.doc), &decoded); err != nil || decoded.Kind != tt.want {
			t.Errorf("the YAML of %q decodes to kind %q (%v), want %q", tt.doc, decoded.Kind, err, tt.want)
		}
	}
}
