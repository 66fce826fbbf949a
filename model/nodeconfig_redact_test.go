package model_test

import (
	"kubeup.dev/kubeup/model"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
)

// TestRedactWithoutSensitiveFlag is the reviewer's case: a stored role's configuration whose files lost their
// sensitive flag (edited by hand, written by an older kubeup) still shows no key in a plan: kube-proxy's
// kubeconfig (client-key-data) and every key are shown as (sensitive), by their mode and their contents.
func TestRedactWithoutSensitiveFlag(t *testing.T) {
	c, _, _, store := appliedCluster(t, 1)
	ks := storedKeystore(t, store, c.Metadata.Name)
	for _, ig := range []string{"control-plane-a", "nodes"} {
		t.Run(ig, func(t *testing.T) {
			nc, _ := storedNodeConfig(t, store, c.Metadata.Name, ig)
			kubeconfig := false
			for i := range nc.Files {
				kubeconfig = kubeconfig || nc.Files[i].Path == c.Spec.KubeProxy.Kubeconfig
				nc.Files[i].Sensitive = false
			}
			if !kubeconfig {
				t.Fatalf("no file %s in the configuration", c.Spec.KubeProxy.Kubeconfig)
			}
			for name, loosen := range map[string]func(*model.NodeFile){
				"flag removed":               func(*model.NodeFile) {},
				"flag removed, mode 0644":    func(f *model.NodeFile) { f.Mode = "0644" },
				"flag removed, mode unknown": func(f *model.NodeFile) { f.Mode = "rw-------" },
			} {
				edited := *nc
				edited.Files = append([]model.NodeFile(nil), nc.Files...)
				for i := range edited.Files {
					loosen(&edited.Files[i])
				}
				obj, err := edited.RoleObject() // the stored object that holds the files
				if err != nil {
					t.Fatal(err)
				}
				shown, err := model.RedactNodeConfigObject(string(obj))
				if err != nil {
					t.Fatal(err)
				}
				if got := keyNames(shown, ks); len(got) > 0 {
					t.Errorf("%s: the plan shows the keys of %v", name, got)
				}
				for _, mark := range []string{"PRIVATE KEY", "client-key-data"} {
					if strings.Contains(shown, mark) {
						t.Errorf("%s: the plan shows %q", name, mark)
					}
				}
				var back model.NodeConfig
				if err := yaml.Unmarshal([]byte(strings.SplitN(shown, "\n", 2)[1]), &back); err != nil {
					t.Fatal(err)
				}
				for i, f := range edited.Files {
					if f.Path == c.Spec.KubeProxy.Kubeconfig && back.Files[i].Contents != engine.Redacted {
						t.Errorf("%s: kube-proxy's kubeconfig is shown", name)
					}
					if f.Mode == "0644" && strings.Contains(f.Contents, "BEGIN CERTIFICATE") && !strings.Contains(f.Contents, "PRIVATE KEY") &&
						!strings.Contains(f.Contents, "client-key-data") && back.Files[i].Contents != f.Contents {
						t.Errorf("%s: %s, a certificate, is not shown as it is", name, f.Path)
					}
				}
			}
		})
	}
}

// TestNodeFileSecret: the rule that decides what a plan shows as (sensitive).
func TestNodeFileSecret(t *testing.T) {
	cert := "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"
	tests := []struct {
		name string
		f    model.NodeFile
		want bool
	}{
		{"a certificate", model.NodeFile{Mode: "0644", Contents: cert}, false},
		{"a public key", model.NodeFile{Mode: "0644", Contents: "-----BEGIN PUBLIC KEY-----\nQ0E=\n-----END PUBLIC KEY-----\n"}, false},
		{"readable by the group", model.NodeFile{Mode: "0640", Contents: cert}, false},
		{"flagged", model.NodeFile{Mode: "0644", Contents: cert, Sensitive: true}, true},
		{"0600", model.NodeFile{Mode: "0600", Contents: cert}, true},
		{"0400", model.NodeFile{Mode: "0400", Contents: "x"}, true},
		{"0700", model.NodeFile{Mode: "0700", Contents: "x"}, true},
		{"0000", model.NodeFile{Mode: "0000", Contents: "x"}, true},
		{"mode not octal", model.NodeFile{Mode: "rw-r--r--", Contents: cert}, true},
		{"mode empty", model.NodeFile{Contents: cert}, true},
		{"mode with file type bits", model.NodeFile{Mode: "0100644", Contents: cert}, true},
		{"a PEM key, 0644", model.NodeFile{Mode: "0644", Contents: "-----BEGIN EC PRIVATE KEY-----\nQ0E=\n-----END EC PRIVATE KEY-----\n"}, true},
		{"a kubeconfig, 0644", model.NodeFile{Mode: "0644", Contents: "users:\n- user:\n    client-key-data: Q0E=\n"}, true},
		{"a token, 0644", model.NodeFile{Mode: "0644", Contents: "users:\n- user:\n    token: abc\n"}, true},
	}
	for _, tt := range tests {
		if got := tt.f.Secret(); got != tt.want {
			t.Errorf("%s: secret() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
