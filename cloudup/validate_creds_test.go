package cloudup

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// TestCredentialWarnings: on aws and gce, validation names the gap of kubelets' bootstrap (a shared token, no
// machine proof), and a control plane that shares the nodes' cloud identity; on the local provider it names
// neither. Warnings never make a cluster unhealthy, and the text output shows them.
func TestCredentialWarnings(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    model.Cluster
		want []string
	}{
		{"local", model.Cluster{Spec: model.ClusterSpec{CloudProvider: model.CloudLocal}}, nil},
		{"aws, one profile", model.Cluster{Spec: model.ClusterSpec{CloudProvider: model.CloudAWS, AWS: &model.AWSSpec{InstanceProfile: "kubeup", ControlPlaneInstanceProfile: "kubeup"}}},
			[]string{"shared bootstrap token and no proof of their machine's identity", "controlPlaneInstanceProfile is the nodes' instance profile (kubeup)"}},
		{"aws, a control-plane profile of its own", model.Cluster{Spec: model.ClusterSpec{CloudProvider: model.CloudAWS, AWS: &model.AWSSpec{InstanceProfile: "kubeup", ControlPlaneInstanceProfile: "kubeup-cp"}}},
			[]string{"no signed instance identity on aws yet"}},
		{"gce", model.Cluster{Spec: model.ClusterSpec{CloudProvider: model.CloudGCE, GCE: &model.GCESpec{ServiceAccount: "default"}}},
			[]string{"no signed instance identity on gce yet", "every machine runs as service account default"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Metadata.Name = demo
			got := credentialWarnings(&tt.c)
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

	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, igs = model.Complete(c, igs)
	c.Spec.CloudProvider = model.CloudGCE // the checks read the API; the warning the spec
	c.Spec.GCE = &model.GCESpec{ServiceAccount: "default"}
	val := healthyWorld(c).serve(t, c, igs).validate(context.Background())
	if !val.Healthy || len(val.Warnings) != 2 {
		t.Fatalf("healthy %t, %d warnings: want healthy with 2 warnings", val.Healthy, len(val.Warnings))
	}
	var b bytes.Buffer
	if err := val.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "WARNINGS (2)\nKubeletCredentials "+demo+": kubelets bootstrap with the cluster's shared bootstrap token") ||
		!strings.Contains(b.String(), "is ready") {
		t.Errorf("the text does not show the warnings, or the verdict:\n%s", b.String())
	}
}
