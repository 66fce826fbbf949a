package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const clusterDoc = `apiVersion: kubeup.dev/v1alpha1
kind: Cluster
metadata:
  name: demo.example.com
spec:
  cloudProvider: local
  zones: [a, b, c]
`

const nodesDoc = `apiVersion: kubeup.dev/v1alpha1
kind: InstanceGroup
metadata:
  name: nodes
spec:
  role: Node
  minSize: 2
  maxSize: 4
`

// clusterDoc and nodesDoc in JSON.
const (
	clusterJSON = `{"apiVersion": "kubeup.dev/v1alpha1", "kind": "Cluster", "metadata": {"name": "demo.example.com"}, "spec": {"cloudProvider": "local", "zones": ["a", "b", "c"]}}`
	nodesJSON   = `{"apiVersion": "kubeup.dev/v1alpha1", "kind": "InstanceGroup", "metadata": {"name": "nodes"}, "spec": {"role": "Node", "minSize": 2, "maxSize": 4}}`
)

func TestDecodeValid(t *testing.T) {
	cluster := &Cluster{
		APIVersion: APIVersion,
		Kind:       KindCluster,
		Metadata:   ObjectMeta{Name: "demo.example.com"},
		Spec:       ClusterSpec{CloudProvider: CloudLocal, Zones: []string{"a", "b", "c"}},
	}
	nodes := &InstanceGroup{
		APIVersion: APIVersion,
		Kind:       KindInstanceGroup,
		Metadata:   ObjectMeta{Name: "nodes"},
		Spec:       InstanceGroupSpec{Role: RoleNode, MinSize: ptr[int32](2), MaxSize: ptr[int32](4)},
	}
	controlPlane := &InstanceGroup{
		APIVersion: APIVersion,
		Kind:       KindInstanceGroup,
		Metadata:   ObjectMeta{Name: "control-plane-a", Labels: map[string]string{"team": "infra"}},
		Spec:       InstanceGroupSpec{Role: RoleControlPlane, Zones: []string{"a"}, MachineType: "local"},
	}
	tests := []struct {
		name string
		in   string
		want *Objects
	}{
		{"one cluster", clusterDoc, &Objects{Cluster: cluster}},
		{"one instance group", nodesDoc, &Objects{InstanceGroups: []*InstanceGroup{nodes}}},
		{
			name: "cluster and instance groups",
			in: clusterDoc + "---\n" + nodesDoc + "--- # the control plane\n" + `apiVersion: kubeup.dev/v1alpha1
kind: InstanceGroup
metadata:
  name: control-plane-a
  labels:
    team: infra
spec:
  role: ControlPlane
  zones: [a]
  machineType: local
`,
			want: &Objects{Cluster: cluster, InstanceGroups: []*InstanceGroup{nodes, controlPlane}},
		},
		{
			name: "leading separator, comment-only and empty documents",
			in:   "# demo\n---\n" + clusterDoc + "---\n# nothing here\n---\n---\n" + nodesDoc + "---\n",
			want: &Objects{Cluster: cluster, InstanceGroups: []*InstanceGroup{nodes}},
		},
		{
			name: "null values are left out",
			in:   clusterDoc + "  api: null\n  kubelet:\n    maxPods: ~\n",
			want: &Objects{Cluster: func() *Cluster {
				c := *cluster
				c.Spec.Kubelet = &KubeletConfig{}
				return &c
			}()},
		},
		{
			// kubeup get -o json of several objects
			name: "a JSON list",
			in:   "[\n" + clusterJSON + ",\n" + nodesJSON + "\n]\n",
			want: &Objects{Cluster: cluster, InstanceGroups: []*InstanceGroup{nodes}},
		},
		{
			// kubectl get -o json of several objects
			name: "a List, in JSON",
			in:   `{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [` + nodesJSON + "," + clusterJSON + "]}",
			want: &Objects{Cluster: cluster, InstanceGroups: []*InstanceGroup{nodes}},
		},
		{
			name: "a List, in YAML, and a document after it",
			in:   "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(clusterDoc, "\n"), "\n", "\n  ") + "\n---\n" + nodesDoc,
			want: &Objects{Cluster: cluster, InstanceGroups: []*InstanceGroup{nodes}},
		},
		{
			name: "instance group before cluster, windows line endings",
			in:   strings.ReplaceAll(nodesDoc+"---\n"+clusterDoc, "\n", "\r\n"),
			want: &Objects{Cluster: cluster, InstanceGroups: []*InstanceGroup{nodes}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode("cluster.yaml", []byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeProblems(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Problem
	}{
		{
			name: "unknown top-level field",
			in:   strings.Replace(clusterDoc, "spec:", "specs:", 1),
			want: []Problem{{"specs", `unknown field: did you mean "spec"?`}},
		},
		{
			name: "unknown field in metadata",
			in:   strings.Replace(clusterDoc, "  name:", "  nmae:", 1),
			want: []Problem{{"metadata.nmae", `unknown field: did you mean "name"?`}},
		},
		{
			name: "unknown field in spec",
			in:   clusterDoc + "  zone: a\n",
			want: []Problem{{"spec.zone", `unknown field: did you mean "zones"?`}},
		},
		{
			name: "field in the wrong case",
			in:   clusterDoc + "  kubelet:\n    maxpods: 10\n",
			want: []Problem{{"spec.kubelet.maxpods", `unknown field: did you mean "maxPods"?`}},
		},
		{
			name: "unknown field deep in a list",
			in: clusterDoc + `  etcdClusters:
  - name: main
    members:
    - name: a
    - name: b
      volumSize: 30
`,
			want: []Problem{{"spec.etcdClusters[0].members[1].volumSize", `unknown field: did you mean "volumeSize"?`}},
		},
		{
			name: "unknown field with nothing close lists the known ones",
			in:   clusterDoc + "  networking:\n    frobnicate: true\n",
			want: []Problem{{"spec.networking.frobnicate",
				"unknown field (written by a newer kubeup? upgrade kubeup): known fields are clusterDomain, nonMasqueradeCIDR, podCIDR, podNetwork, serviceClusterIPRange"}},
		},
		{
			name: "unknown field in an instance group",
			in:   nodesDoc + "  machinetype: t3.large\n  maxsize: 3\n",
			want: []Problem{
				{"spec.machinetype", `unknown field: did you mean "machineType"?`},
				{"spec.maxsize", `unknown field: did you mean "maxSize"?`},
			},
		},
		{
			name: "wrong types",
			in: clusterDoc + `  kubernetesVersion: 1.34
  api: [api.demo.example.com]
  kubelet:
    maxPods: "110"
    failSwapOn: maybe
    nodeLabels: {tier: 1}
    registerWithTaints: dedicated=infra:NoSchedule
  etcdClusters:
  - name: main
    clientPort: 99999999999
    members:
    - name: a
      volumeSize: 20.5
      encrypted: "true"
`,
			want: []Problem{
				{"spec.api", "must be a mapping, not a list"},
				{"spec.etcdClusters[0].clientPort", "must be a whole number that fits in int32, not 9.9999999999e+10"},
				{"spec.etcdClusters[0].members[0].encrypted", `must be true or false, not the string "true"`},
				{"spec.etcdClusters[0].members[0].volumeSize", "must be a whole number that fits in int32, not 20.5"},
				{"spec.kubelet.failSwapOn", `must be true or false, not the string "maybe"`},
				{"spec.kubelet.maxPods", `must be a whole number, not the string "110"`},
				{"spec.kubelet.nodeLabels[tier]", "must be a string, not the number 1 (quote it)"},
				{"spec.kubelet.registerWithTaints", `must be a list, not the string "dedicated=infra:NoSchedule"`},
				{"spec.kubernetesVersion", "must be a string, not the number 1.34 (quote it)"},
			},
		},
		{
			name: "spec is not a mapping",
			in:   strings.Replace(clusterDoc, "spec:", "spec: []\nx:", 1),
			want: []Problem{
				{"spec", "must be a mapping, not a list"},
				{"x", "unknown field (written by a newer kubeup? upgrade kubeup): known fields are apiVersion, kind, metadata, spec"},
			},
		},
		{
			name: "unknown kind",
			in:   strings.Replace(clusterDoc, "kind: Cluster", "kind: Clustr", 1),
			want: []Problem{{"kind", `"Clustr" is not a kind kubeup knows: want Cluster or InstanceGroup`}},
		},
		{
			name: "kind missing",
			in:   strings.Replace(clusterDoc, "kind: Cluster\n", "", 1),
			want: []Problem{{"kind", "required: Cluster or InstanceGroup"}},
		},
		{
			name: "kind not a string",
			in:   strings.Replace(clusterDoc, "kind: Cluster", "kind: 3", 1),
			want: []Problem{{"kind", "must be Cluster or InstanceGroup, not the number 3"}},
		},
		{
			name: "wrong apiVersion",
			in:   strings.Replace(clusterDoc, "kubeup.dev/v1alpha1", "kops.k8s.io/v1alpha2", 1),
			want: []Problem{{"apiVersion", `"kops.k8s.io/v1alpha2" is not supported: want kubeup.dev/v1alpha1`}},
		},
		{
			name: "a field of a newer kubeup",
			in:   clusterDoc + "  frobnicator:\n    enabled: true\n",
			want: []Problem{{"spec.frobnicator", "unknown field (written by a newer kubeup? upgrade kubeup): known fields are " +
				"addons, api, assets, aws, cloudProvider, configBase, containerd, dnsZone, etcdClusters, gce, kubeAPIServer, kubeControllerManager, kubeProxy, kubeScheduler, " +
				"kubelet, kubernetesVersion, local, networking, nodeup, project, region, zones"}},
		},
		{
			name: "a kind of a newer kubeup",
			in:   strings.Replace(nodesDoc, "kind: InstanceGroup", "kind: Frobnicator", 1),
			want: []Problem{{"kind", `"Frobnicator" is not a kind kubeup knows: want Cluster or InstanceGroup (written by a newer kubeup? upgrade kubeup)`}},
		},
		{
			name: "apiVersion missing, and an unknown field",
			in:   strings.Replace(nodesDoc, "apiVersion: kubeup.dev/v1alpha1\n", "", 1) + "  zone: [a]\n",
			want: []Problem{
				{"apiVersion", "required: kubeup.dev/v1alpha1"},
				{"spec.zone", `unknown field: did you mean "zones"?`},
			},
		},
		{
			name: "document is a list of what is no object",
			in:   "- a\n- b\n",
			want: []Problem{
				{"[0]", `a document must be a mapping with apiVersion, kind, metadata and spec, not the string "a"`},
				{"[1]", `a document must be a mapping with apiVersion, kind, metadata and spec, not the string "b"`},
			},
		},
		{
			name: "a List's mistakes",
			in:   `{"apiVersion": "v2", "kind": "List", "item": [], "items": [{"kind": "List", "items": []}, ` + strings.Replace(nodesJSON, `"role"`, `"rol"`, 1) + `]}`,
			want: []Problem{
				{"apiVersion", `the string "v2" is not the apiVersion of a List: want v1`},
				{"item", "unknown field of a List: it holds apiVersion, kind and items"},
				{"items[0]: kind", "a List inside a List: give its items in the outer one"},
				{"items[1]: spec.rol", `unknown field: did you mean "role"?`},
			},
		},
		{
			name: "a List's items are no list",
			in:   "apiVersion: v1\nkind: List\nitems: {a: b}\n",
			want: []Problem{{"items", "must be a list of Cluster and InstanceGroup objects, not a mapping"}},
		},
		{
			name: "two clusters",
			in:   clusterDoc + "---\n" + clusterDoc,
			want: []Problem{{"document 2 (line 9): kind", "a file holds at most one Cluster; this is the second"}},
		},
		{
			name: "every problem of every document at once",
			in: clusterDoc + "  zone: a\n" + // lines 1-8
				"---\n" + // 9
				nodesDoc + // 10-17
				"---\n" + // 18
				"- not a mapping\n" + // 19
				"---\n" + // 20
				strings.Replace(nodesDoc, "role: Node", "role: Node\n  imag: debian", 1) + // 21-
				"---\n" +
				strings.Replace(clusterDoc, "v1alpha1", "v1", 1),
			want: []Problem{
				{"document 1 (line 1): spec.zone", `unknown field: did you mean "zones"?`},
				{"document 3 (line 19): [0]", `a document must be a mapping with apiVersion, kind, metadata and spec, not the string "not a mapping"`},
				{"document 4 (line 21): spec.imag", `unknown field: did you mean "image"?`},
				{"document 5 (line 31): apiVersion", `"kubeup.dev/v1" is not supported: want kubeup.dev/v1alpha1 (written by a newer kubeup? upgrade kubeup)`},
			},
		},
		{
			// It was "instance group "nodes" is given twice", naming neither document.
			name: "an instance group given twice: both documents named",
			in:   clusterDoc + "---\n" + nodesDoc + "---\n" + nodesDoc,
			want: []Problem{{"document 3 (line 18): metadata.name",
				`instance group "nodes" is also document 2 (line 9): a file gives each instance group once; remove or rename one`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode("cluster.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Decode returned %+v and no error; want problems %v", got, tt.want)
			}
			if got != nil {
				t.Errorf("Decode returned objects %+v with its error", got)
			}
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if source := err.(*InvalidError).Source; source != "cluster.yaml" {
				t.Errorf("Source = %q, want cluster.yaml", source)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "malformed YAML",
			in:   clusterDoc + "  api: [unclosed\n",
			want: "cluster.yaml: malformed YAML: line 8: did not find expected ',' or ']'",
		},
		{
			name: "malformed YAML in a later document names the file's line",
			in:   nodesDoc + "---\n" + clusterDoc + "  api: [unclosed\n",
			want: "cluster.yaml: document 2 (line 10): malformed YAML: line 17: did not find expected ',' or ']'",
		},
		{
			name: "tab indentation",
			in:   clusterDoc + "\tkubelet: {}\n",
			want: "cluster.yaml: malformed YAML: line 8: found character that cannot start any token",
		},
		{
			name: "a key set twice",
			in:   clusterDoc + "  zones: [d]\n",
			want: `cluster.yaml: malformed YAML: line 8: key "zones" already set in map`,
		},
		{
			name: "keys set twice in a later document",
			in:   nodesDoc + "---\n" + clusterDoc + "  zones: [d]\n  cloudProvider: aws\n",
			want: `cluster.yaml: document 2 (line 10): malformed YAML: line 17: key "zones" already set in map; line 18: key "cloudProvider" already set in map`,
		},
		{
			name: "empty file",
			in:   "",
			want: "cluster.yaml: no Cluster or InstanceGroup in the file",
		},
		{
			name: "only comments and separators",
			in:   "# nothing yet\n---\n\n---\n",
			want: "cluster.yaml: no Cluster or InstanceGroup in the file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode("cluster.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Decode returned %+v and no error; want %q", got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %q\nwant %q", err, tt.want)
			}
		})
	}
}

func TestInvalidErrorMessage(t *testing.T) {
	tests := []struct {
		name     string
		problems []Problem
		want     string
	}{
		{
			name:     "one problem on one line",
			problems: []Problem{{"spec.zone", `unknown field: did you mean "zones"?`}},
			want:     `cluster.yaml: spec.zone: unknown field: did you mean "zones"?`,
		},
		{
			name:     "a problem without a path",
			problems: []Problem{{"", "a document must be a mapping"}},
			want:     "cluster.yaml: a document must be a mapping",
		},
		{
			name:     "several problems, one per line",
			problems: []Problem{{"spec.zone", "unknown field"}, {"kind", "required"}},
			want:     "cluster.yaml: 2 problems:\n  spec.zone: unknown field\n  kind: required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &InvalidError{Source: "cluster.yaml", Problems: tt.problems}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeRefusesOversizedInput: a spec is a few KiB; a file over MaxSpecBytes is refused before it is
// parsed (a 57 MB one took 1m22s and 2.8 GB), with its name, its size and the limit. One of exactly the limit
// is read.
func TestDecodeRefusesOversizedInput(t *testing.T) {
	atLimit := []byte(clusterDoc + "# " + strings.Repeat("x", MaxSpecBytes-len(clusterDoc)-3) + "\n")
	if len(atLimit) != MaxSpecBytes {
		t.Fatalf("test input of %d bytes, want %d", len(atLimit), MaxSpecBytes)
	}
	if _, err := Decode("big.yaml", atLimit); err != nil {
		t.Errorf("Decode of exactly MaxSpecBytes: %v", err)
	}
	over := append(atLimit, '\n')
	_, err := Decode("big.yaml", over)
	want := "big.yaml: 1048577 bytes is over the limit of 1048576 bytes (1 MiB) for a spec: a cluster's spec is a few KiB, is it the right file?"
	if err == nil || err.Error() != want {
		t.Errorf("Decode of MaxSpecBytes+1:\n got %v\nwant %s", err, want)
	}
}

// countingReader is an endless spec: it counts what is read from it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '#'
	}
	r.n += len(p)
	return len(p), nil
}

func TestReadSpec(t *testing.T) {
	r := &countingReader{}
	_, err := ReadSpec("-", r)
	if err == nil || err.Error() != "-: more than 1048576 bytes (1 MiB), the limit for a spec: a cluster's spec is a few KiB, is it the right file?" {
		t.Errorf("ReadSpec of an endless stream: %v", err)
	}
	if r.n > MaxSpecBytes+1 {
		t.Errorf("ReadSpec read %d bytes of an endless stream, want at most MaxSpecBytes+1 = %d", r.n, MaxSpecBytes+1)
	}

	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, 57<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = ReadSpec(big, f)
	if want := big + ": 59768832 bytes (57.0 MiB) is over the limit of 1048576 bytes (1 MiB) for a spec: a cluster's spec is a few KiB, is it the right file?"; err == nil || err.Error() != want {
		t.Errorf("ReadSpec of a 57 MiB file:\n got %v\nwant %s", err, want)
	}

	data, err := ReadSpec("cluster.yaml", strings.NewReader(clusterDoc))
	if err != nil || string(data) != clusterDoc {
		t.Errorf("ReadSpec of a spec: %q, %v", data, err)
	}
}

// TestEncodeDecode checks that the complete spec survives Encode and Decode unchanged: what `kubeup get cluster
// --full -o yaml` prints can be given back to `kubeup replace -f`.
func TestEncodeDecode(t *testing.T) {
	for _, cloud := range []string{CloudLocal, CloudAWS, CloudGCE} {
		t.Run(cloud, func(t *testing.T) {
			c, igs := completeSpec(t, cloud, 3)
			objs := []any{c}
			for _, ig := range igs {
				objs = append(objs, ig)
			}
			data, err := Encode(objs...)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode("full.yaml", data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(&Objects{Cluster: c, InstanceGroups: igs}, got); diff != "" {
				t.Errorf("Decode(Encode(complete spec)) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppliedOf: the etcd clusters and the pod network of a stored complete spec are read whatever else it holds
// (fields and an apiVersion another kubeup version writes); a spec without a pod network (written before the field
// was) ran kubenet; a file without a Cluster, or that is no YAML, is an error naming it.
func TestAppliedOf(t *testing.T) {
	data := "apiVersion: kubeup.dev/v1beta9\nkind: Cluster\nmetadata:\n  name: demo.example.com\nspec:\n  someNewField: 1\n" +
		"  etcdClusters:\n  - name: main\n    members:\n    - {name: a, instanceGroup: control-plane-a, newThing: x}\n---\nkind: InstanceGroup\n"
	got, err := AppliedOf("spec", []byte(data))
	if err != nil || len(got.EtcdClusters) != 1 || got.EtcdClusters[0].Name != "main" || len(got.EtcdClusters[0].Members) != 1 ||
		got.EtcdClusters[0].Members[0].InstanceGroup != "control-plane-a" || got.PodNetwork != PodNetworkKubenet {
		t.Errorf("AppliedOf = %+v, %v", got, err)
	}
	data = "kind: Cluster\nspec:\n  networking:\n    podNetwork: flannel\n    newThing: x\n"
	if got, err := AppliedOf("spec", []byte(data)); err != nil || got.PodNetwork != PodNetworkFlannel {
		t.Errorf("AppliedOf(%q) = %+v, %v", data, got, err)
	}
	for _, bad := range []string{"kind: InstanceGroup\n", "kind: [\n"} {
		if _, err := AppliedOf("spec", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "spec: ") {
			t.Errorf("AppliedOf(%q): %v", bad, err)
		}
	}
}
