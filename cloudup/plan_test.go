package cloudup

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/model"
)

// planScenarios are spec changes a reviewer reads the dry run of. Each starts from the same applied cluster: one
// control-plane node and one node in zone a, Kubernetes 1.34.2.
var planScenarios = []struct {
	name   string
	change func(c *model.Cluster, igs []*model.InstanceGroup)
	want   []string // the spec's changes the text plan must list
}{
	{"version-bump", func(c *model.Cluster, _ []*model.InstanceGroup) { c.Spec.KubernetesVersion = "1.34.3" },
		[]string{"spec.kubernetesVersion: 1.34.2 -> 1.34.3", "spec.kubeAPIServer.image: registry.k8s.io/kube-apiserver:v1.34.2 -> registry.k8s.io/kube-apiserver:v1.34.3"}},
	{"instance-group-resize", func(_ *model.Cluster, igs []*model.InstanceGroup) { group(igs, "nodes").Spec.MaxSize = ptr(int32(3)) },
		[]string{"instanceGroups[nodes].spec.maxSize: 1 -> 3"}},
	{"kubelet-max-pods", func(c *model.Cluster, _ []*model.InstanceGroup) {
		c.Spec.Kubelet = &model.KubeletConfig{MaxPods: ptr(int32(120))}
	}, []string{"spec.kubelet.maxPods: 110 -> 120"}},
	{"new-zone", func(c *model.Cluster, igs []*model.InstanceGroup) {
		c.Spec.Zones = append(c.Spec.Zones, "b")
		nodes := group(igs, "nodes")
		nodes.Spec.Zones = append(nodes.Spec.Zones, "b")
	}, []string{"spec.zones[1]: <none> -> b", "instanceGroups[nodes].spec.zones[1]: <none> -> b"}},
}

// createSmallDemo creates (does not apply) the local cluster demo in a new store: one control-plane node and one
// node in zone a, Kubernetes 1.34.2.
func createSmallDemo(t *testing.T) *Clusters {
	t.Helper()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal,
		Zones: []string{"a"}, ControlPlaneCount: 1, NodeCount: 1, KubernetesVersion: "1.34.2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(context.Background(), "create", c, igs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func group(igs []*model.InstanceGroup, name string) *model.InstanceGroup {
	i := slices.IndexFunc(igs, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == name })
	return igs[i]
}

// keyMaterial is what a plan must never hold, and what no golden plan may hold either: certificates are random
// (a new key each run), so a golden that held one would never match.
var keyMaterial = regexp.MustCompile(`PRIVATE KEY|BEGIN CERTIFICATE|LS0tLS1CRUdJTi`)

// sha256Hex is a sha256 in hex, as a plan shows one.
var sha256Hex = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// TestPlanGolden: the text and JSON dry runs of each scenario, after an apply of the cluster as it was.
func TestPlanGolden(t *testing.T) {
	for _, sc := range planScenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			cs := createSmallDemo(t)
			quiet := slog.New(slog.DiscardHandler)
			var out bytes.Buffer
			if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out, Apply: true, Logger: quiet}); err != nil {
				t.Fatal(err)
			}

			s, err := cs.Get(ctx, demo)
			if err != nil {
				t.Fatal(err)
			}
			sc.change(s.Cluster, s.InstanceGroups)
			if _, err := cs.write(ctx, sc.name, s.Cluster, s.InstanceGroups, s.Generation); err != nil {
				t.Fatal(err)
			}

			var text, js bytes.Buffer
			plan, err := cs.Update(ctx, demo, UpdateOptions{Out: &text, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &js, JSON: true, Logger: quiet}); err != nil {
				t.Fatal(err)
			}
			for _, want := range sc.want {
				if !strings.Contains(text.String(), "\n  "+want+"\n") {
					t.Errorf("the plan's spec changes lack %q:\n%s", want, &text)
				}
			}
			for _, c := range plan.Spec {
				if n := strings.Count(text.String(), "\n  "+c.Path+":"); n != 1 {
					t.Errorf("%s is shown %d times, want once:\n%s", c.Path, n, &text)
				}
			}
			for name, p := range map[string]string{"text": text.String(), "JSON": js.String()} {
				if keyMaterial.MatchString(p) {
					t.Errorf("the %s plan holds a certificate or a key:\n%s", name, p)
				}
			}
			var decoded struct {
				APIVersion string         `json:"apiVersion"`
				Summary    map[string]int `json:"summary"`
				Spec       []struct {
					Path string `json:"path"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
				t.Fatalf("the JSON plan does not decode: %v", err)
			}
			if decoded.APIVersion != engine.PlanAPIVersion || decoded.Summary["modify"] != len(plan.Changes) || len(decoded.Spec) != len(plan.Spec) {
				t.Errorf("the JSON plan: %+v; want %s, %d changes modified, %d spec changes", decoded, engine.PlanAPIVersion, len(plan.Changes), len(plan.Spec))
			}
			// A group's configuration pins its role's by a sha256 of keys issued anew in each run: the golden
			// file holds where it changes, not the value.
			golden.Assert(t, "testdata/plan-"+sc.name+".txt", sha256Hex.ReplaceAll(text.Bytes(), []byte("<sha256>")))
			golden.Assert(t, "testdata/plan-"+sc.name+".json", sha256Hex.ReplaceAll(js.Bytes(), []byte("<sha256>")))
		})
	}
}
