package nodetasks

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
	"sigs.k8s.io/yaml"
)

// etcdPod has every field a static pod of kubeup uses.
func etcdPod() *Pod {
	return &Pod{
		Metadata: ObjectMeta{Name: "etcd-manager-main", Namespace: "kube-system",
			Labels: map[string]string{"k8s-app": "etcd-manager-main"}, Annotations: map[string]string{"z": "1", "a": "2"}},
		Spec: PodSpec{
			HostNetwork:       true,
			PriorityClassName: "system-cluster-critical",
			Containers: []Container{{
				Name:    "etcd",
				Image:   "registry.k8s.io/etcd:3.5.15-0",
				Command: []string{"/usr/local/bin/etcd"},
				Args:    []string{"--data-dir=/var/lib/etcd", "--listen-client-urls=https://0.0.0.0:4001"},
				Env:     []EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "8589934592"}},
				Ports:   []ContainerPort{{Name: "client", ContainerPort: 4001, HostPort: 4001, Protocol: "TCP"}},
				VolumeMounts: []VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"},
					{Name: "pki", MountPath: "/etc/kubernetes/pki/etcd", ReadOnly: true}},
				Resources: ResourceRequirements{Requests: map[string]string{"cpu": "200m", "memory": "100Mi"}},
				LivenessProbe: &Probe{HTTPGet: &HTTPGetAction{Host: "127.0.0.1", Path: "/health", Port: 4001, Scheme: "HTTPS"},
					InitialDelaySeconds: 15, TimeoutSeconds: 15, PeriodSeconds: 10, FailureThreshold: 3},
			}},
			Volumes: []Volume{
				{Name: "data", HostPath: &HostPathVolumeSource{Path: "/mnt/etcd/main", Type: "DirectoryOrCreate"}},
				{Name: "pki", HostPath: &HostPathVolumeSource{Path: "/etc/kubernetes/pki/etcd"}},
			},
			Tolerations: []Toleration{{Key: "CriticalAddonsOnly", Operator: "Exists"}, {Operator: "Exists", Effect: "NoSchedule"}},
		},
	}
}

// The manifest is byte-stable: golden, and the same from run to run.
func TestPodYAML(t *testing.T) {
	y, err := etcdPod().YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/etcd-manifest.golden", []byte(y))
	for range 20 {
		again, _ := etcdPod().YAML()
		if again != y {
			t.Fatalf("the YAML of one pod differs between renders:\n%s\n---\n%s", y, again)
		}
	}
}

// YAML remembers conversions by the pod's JSON: each render is still sigs.k8s.io/yaml's Marshal of the pod, a pod
// changed after a render renders as changed, and more pods than the memo holds render right.
func TestPodYAMLMemo(t *testing.T) {
	marshal := func(p *Pod) string {
		c := *p
		c.APIVersion, c.Kind = "v1", "Pod"
		b, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	p := etcdPod()
	for i := range 3 * maxRenderedYAML {
		if i > 0 {
			p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, fmt.Sprintf("--flag-%d", i))
		}
		for range 2 { // the second render comes from the memo
			y, err := p.YAML()
			if err != nil {
				t.Fatal(err)
			}
			if want := marshal(p); y != want {
				t.Fatalf("pod %d: YAML() differs from yaml.Marshal:\n%s", i, cmp.Diff(want, y))
			}
		}
	}
}

func manifests() *engine.Graph[*Node] {
	g := engine.NewGraph[*Node]()
	engine.Add(g, &ManifestFile{Path: "/etc/kubernetes/manifests/etcd-main.manifest", Pod: etcdPod()})
	return g
}

func TestManifestFileApplyThenNoChanges(t *testing.T) {
	n := testNode(t, nil)
	enginetest.ApplyThenNoChanges(t, context.Background(), n, manifests)
	want, _ := etcdPod().YAML()
	b, err := os.ReadFile(filepath.Join(n.Root, "etc/kubernetes/manifests/etcd-main.manifest"))
	if err != nil || string(b) != want {
		t.Errorf("manifest = %q, %v; want the pod's YAML", b, err)
	}
}

// A changed pod shows as a line diff of its manifest.
func TestManifestFileDriftReport(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, nil)
	if _, err := engine.Run(ctx, manifests(), n, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	g := engine.NewGraph[*Node]()
	pod := etcdPod()
	pod.Spec.Containers[0].Image = "registry.k8s.io/etcd:3.5.16-0"
	engine.Add(g, &ManifestFile{Path: "/etc/kubernetes/manifests/etcd-main.manifest", Pod: pod})
	res, err := engine.Run(ctx, g, n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	res.Plan.WriteText(&report)
	golden.Assert(t, "testdata/manifest-drift.golden", report.Bytes())
}

func TestManifestFileCheckChanges(t *testing.T) {
	for _, m := range []*ManifestFile{
		{Path: "/m"},
		{Path: "/m", Pod: &Pod{Metadata: ObjectMeta{Name: "x"}}},
		{Path: "m", Pod: etcdPod()},
	} {
		if err := m.CheckChanges(nil, m, m); err == nil {
			t.Errorf("CheckChanges(%+v): want an error", m)
		}
	}
}

func TestManifestFileDeps(t *testing.T) {
	enginetest.CheckDeps(t, &ManifestFile{Path: "/m", After: []engine.Task{&FormatAndMount{MountPoint: "/mnt"}}})
}
