package awsprovider

import (
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// TestCredentialWarnings: on aws, validation names the gap of kubelets' bootstrap (a shared token, no machine
// proof), and a control plane that shares the nodes' instance profile.
func TestCredentialWarnings(t *testing.T) {
	for _, tt := range []struct {
		name string
		aws  model.AWSSpec
		want []string
	}{
		{"one profile", model.AWSSpec{InstanceProfile: "kubeup", ControlPlaneInstanceProfile: "kubeup"},
			[]string{"shared bootstrap token and no proof of their machine's identity", "controlPlaneInstanceProfile is the nodes' instance profile (kubeup)"}},
		{"a control-plane profile of its own", model.AWSSpec{InstanceProfile: "kubeup", ControlPlaneInstanceProfile: "kubeup-cp"},
			[]string{"no signed instance identity on aws yet"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &model.Cluster{Metadata: model.ObjectMeta{Name: "demo.example.com"}, Spec: model.ClusterSpec{CloudProvider: model.CloudAWS, AWS: &tt.aws}}
			got := provider{}.CredentialWarnings(c)
			if len(got) != len(tt.want) {
				t.Fatalf("warnings %v, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i].Message, w) {
					t.Errorf("warning %q does not say %q", got[i], w)
				}
			}
		})
	}
}
