package cloudup

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/kubetasks/kubetest"
)

// addonTest is a local cluster, created (not applied), whose kubeconfig reaches a fake API.
type addonTest struct {
	t          *testing.T
	ctx        context.Context
	cs         *Clusters
	api        *kubetest.API
	kubeconfig string
}

func newAddonTest(t *testing.T) *addonTest {
	t.Helper()
	api, _ := kubetest.New(t)
	at := &addonTest{t: t, ctx: context.Background(), cs: createSmallDemo(t), api: api, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	at.writeKubeconfig(api.URL)
	return at
}

// writeKubeconfig writes a kubeconfig whose context demo reaches server with the fake API's credentials, as
// `kubeup export kubeconfig` writes one.
func (at *addonTest) writeKubeconfig(server string) {
	if err := os.WriteFile(at.kubeconfig, at.api.Kubeconfig(demo, server), 0o600); err != nil {
		at.t.Fatal(err)
	}
}

// update runs an update (a dry run unless apply) and returns its plan and its report, text then JSON (a JSON
// report is made by a second dry run, when the first was one).
func (at *addonTest) update(apply bool) (*engine.Plan, string, string) {
	at.t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	var text, js bytes.Buffer
	plan, err := at.cs.Update(at.ctx, demo, UpdateOptions{Out: &text, Apply: apply, Logger: quiet, Kubeconfig: at.kubeconfig})
	if err != nil {
		at.t.Fatalf("update (apply %v): %v\n%s", apply, err, &text)
	}
	if !apply {
		if _, err := at.cs.Update(at.ctx, demo, UpdateOptions{Out: &js, JSON: true, Logger: quiet, Kubeconfig: at.kubeconfig}); err != nil {
			at.t.Fatalf("update -o json: %v", err)
		}
	}
	return plan, text.String(), js.String()
}

// edit changes the stored spec.
func (at *addonTest) edit(change func(s *model.ClusterSpec)) {
	at.t.Helper()
	s, err := at.cs.Get(at.ctx, demo)
	if err != nil {
		at.t.Fatal(err)
	}
	change(&s.Cluster.Spec)
	if _, err := at.cs.write(at.ctx, "edit", s.Cluster, s.InstanceGroups, s.Generation); err != nil {
		at.t.Fatal(err)
	}
}

// addonChanges are the changes of a plan to objects in the cluster, as "action key".
func addonChanges(p *engine.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		if c.Key.Type == kubetasks.ObjectKeyType {
			out = append(out, string(c.Action)+" "+c.Key.Name)
		}
	}
	return out
}

// jsonPlan is the part of the JSON plan the tests read.
type jsonPlanOf struct {
	Changes []struct {
		Key    string `json:"key"`
		Action string `json:"action"`
		Fields []struct {
			Name    string `json:"name"`
			Changes []struct {
				Path   string `json:"path"`
				Before any    `json:"before"`
				After  any    `json:"after"`
			} `json:"changes"`
		} `json:"fields"`
	} `json:"changes"`
}

func decodePlan(t *testing.T, js string) jsonPlanOf {
	t.Helper()
	var p jsonPlanOf
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatalf("the JSON plan does not decode: %v\n%s", err, js)
	}
	return p
}

var coreDNSKeys = []string{"ClusterRole/system:coredns", "ClusterRoleBinding/system:coredns", "ConfigMap/kube-system/coredns",
	"Deployment/kube-system/coredns", "Service/kube-system/kube-dns", "ServiceAccount/kube-system/coredns"}

func withAction(action string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = action + " " + k
	}
	return out
}

// TestAddonsApplied: the first dry run of a cluster whose API answers plans CoreDNS's six objects as creations, in
// the text and JSON plans, and applies nothing; the apply applies each by server-side apply as kubeup, its
// Deployment after its RBAC, ServiceAccount and ConfigMap; a second dry run plans no change.
func TestAddonsApplied(t *testing.T) {
	at := newAddonTest(t)
	plan, text, js := at.update(false)
	if got := addonChanges(plan); !slices.Equal(got, withAction("create", coreDNSKeys)) {
		t.Fatalf("the first dry run's addon changes %q, want CoreDNS's six objects created\n%s", got, text)
	}
	if !strings.Contains(text, "KubeObject/Deployment/kube-system/coredns") || strings.Contains(text, "Addons wait") {
		t.Errorf("the text plan does not show the Deployment, or says the addons wait:\n%s", text)
	}
	created := 0
	for _, c := range decodePlan(t, js).Changes {
		if strings.HasPrefix(c.Key, kubetasks.ObjectKeyType+"/") && c.Action == "create" {
			created++
		}
	}
	if created != 6 || len(at.api.Patches) != 0 {
		t.Fatalf("the JSON plan creates %d objects (want 6); the dry runs sent %d PATCHes (want none)", created, len(at.api.Patches))
	}

	at.update(true)
	var order []string
	for _, p := range at.api.Patches {
		if !strings.HasSuffix(p, " fieldManager=kubeup force=true") {
			t.Errorf("PATCH %s: not server-side apply as kubeup", p)
		}
		order = append(order, strings.Fields(p)[0])
	}
	if len(order) != 6 {
		t.Errorf("applied %q: want six objects", order)
	}
	dep := slices.Index(order, "/apis/apps/v1/namespaces/kube-system/deployments/coredns")
	for _, first := range []string{"/api/v1/namespaces/kube-system/configmaps/coredns", "/api/v1/namespaces/kube-system/serviceaccounts/coredns",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/system:coredns", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:coredns"} {
		if i := slices.Index(order, first); i < 0 || i > dep {
			t.Errorf("%s applied at %d, the Deployment at %d: want it first (%q)", first, i, dep, order)
		}
	}
	if got := at.api.Objects["/api/v1/namespaces/kube-system/services/kube-dns"]["spec"].(map[string]any)["clusterIP"]; got != "100.64.0.10" {
		t.Errorf("Service kube-dns's clusterIP %v, want spec.kubelet.clusterDNS 100.64.0.10", got)
	}
	if plan, text, _ := at.update(false); !plan.Empty() || !strings.Contains(text, "No changes need to be applied") {
		t.Fatalf("after the apply, a dry run plans changes:\n%s", text)
	}
}

// TestAddonImageChange: a new CoreDNS image in the spec changes, of the cluster's objects, only the Deployment,
// and of it only the container's image, by field path in the text and JSON plans; after the apply a dry run plans
// nothing. A change of replicas changes no node configuration (no rolling update for it).
func TestAddonImageChange(t *testing.T) {
	at := newAddonTest(t)
	at.update(true)
	const newImage = "registry.k8s.io/coredns/coredns:v1.12.2"
	at.edit(func(s *model.ClusterSpec) {
		s.Addons = &model.AddonsSpec{CoreDNS: &model.CoreDNSAddon{Image: newImage}}
	})
	plan, text, js := at.update(false)
	if got := addonChanges(plan); !slices.Equal(got, []string{"modify Deployment/kube-system/coredns"}) {
		t.Fatalf("addon changes %q, want the Deployment modified only\n%s", got, text)
	}
	const path = "spec.template.spec.containers[coredns].image"
	if want := "      " + path + ": " + model.DefaultCoreDNSImage + " -> " + newImage + "\n"; !strings.Contains(text, "KubeObject/Deployment/kube-system/coredns\n    Manifest\n"+want) {
		t.Errorf("the text plan does not show the Deployment's change as %q alone:\n%s", want, text)
	}
	for _, c := range decodePlan(t, js).Changes {
		if c.Key != kubetasks.ObjectKeyType+"/Deployment/kube-system/coredns" {
			continue
		}
		if len(c.Fields) != 1 || len(c.Fields[0].Changes) != 1 || c.Fields[0].Changes[0].Path != path || c.Fields[0].Changes[0].After != newImage {
			t.Errorf("the JSON plan's Deployment change %+v, want the one path %s -> %s", c, path, newImage)
		}
	}
	at.update(true)
	if got := at.api.Objects["/apis/apps/v1/namespaces/kube-system/deployments/coredns"]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]; got != newImage {
		t.Errorf("the Deployment's image is %v after the apply, want %s", got, newImage)
	}
	if plan, text, _ := at.update(false); !plan.Empty() {
		t.Fatalf("after the apply, a dry run plans changes:\n%s", text)
	}

	at.edit(func(s *model.ClusterSpec) { s.Addons.CoreDNS.Replicas = ptr(int32(3)) })
	plan, text, _ = at.update(false)
	for _, c := range plan.Changes {
		if strings.Contains(c.Key.Name, "/nodeup/") {
			t.Errorf("a change of replicas changes %s: nodes would be replaced for it\n%s", c.Key, text)
		}
	}
	if !strings.Contains(text, "spec.replicas: 2 -> 3") {
		t.Errorf("the plan does not show the Deployment's replicas 2 -> 3:\n%s", text)
	}
}

// TestAddonDisabled: disabling CoreDNS plans the deletion of its six objects, the apply deletes them and no other
// (an object without kubeup's label in the same collections stays); the operator's own Deployment
// kube-system/coredns, without the label, is then never deleted nor changed, and enabling the addon again while
// it is there is refused, naming it.
func TestAddonDisabled(t *testing.T) {
	at := newAddonTest(t)
	at.update(true)
	const theirs = "/apis/apps/v1/namespaces/kube-system/deployments/my-dns"
	at.api.Lock()
	at.api.Objects[theirs] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "my-dns", "namespace": "kube-system"}}
	at.api.Unlock()

	at.edit(func(s *model.ClusterSpec) {
		s.Addons = &model.AddonsSpec{CoreDNS: &model.CoreDNSAddon{Enabled: ptr(false)}}
	})
	plan, text, js := at.update(false)
	if got := addonChanges(plan); !slices.Equal(got, withAction("delete", coreDNSKeys)) {
		t.Fatalf("addon changes %q, want CoreDNS's six objects deleted\n%s", got, text)
	}
	if !strings.Contains(text, "Will delete resources:\n") || !strings.Contains(text, "KubeObject/Deployment/kube-system/coredns (labelled kubeup.dev/addon=coredns; the addon is disabled)") {
		t.Errorf("the text plan does not list the deletion and why:\n%s", text)
	}
	deletes := 0
	for _, c := range decodePlan(t, js).Changes {
		if c.Action == "delete" && strings.HasPrefix(c.Key, kubetasks.ObjectKeyType+"/") {
			deletes++
		}
	}
	if deletes != 6 || len(at.api.Deletes) != 0 {
		t.Fatalf("the JSON plan deletes %d objects (want 6); the dry runs deleted %v (want none)", deletes, at.api.Deletes)
	}
	at.update(true)
	if len(at.api.Deletes) != 6 || slices.Contains(at.api.Deletes, theirs) {
		t.Fatalf("deleted %q: want CoreDNS's six objects, not %s", at.api.Deletes, theirs)
	}
	if _, ok := at.api.Objects[theirs]; !ok {
		t.Fatalf("%s, an object without kubeup's label, was deleted", theirs)
	}

	// The operator runs their own CoreDNS, by the same name, without kubeup's label.
	const own = "/apis/apps/v1/namespaces/kube-system/deployments/coredns"
	at.api.Lock()
	at.api.Objects[own] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "coredns", "namespace": "kube-system", "labels": map[string]any{"k8s-app": "kube-dns"}}}
	patches := len(at.api.Patches)
	at.api.Unlock()
	if plan, text, _ := at.update(false); !plan.Empty() {
		t.Fatalf("with the addon disabled and the operator's own CoreDNS, a dry run plans changes:\n%s", text)
	}
	at.update(true)
	if _, ok := at.api.Objects[own]; !ok || len(at.api.Deletes) != 6 || len(at.api.Patches) != patches {
		t.Fatalf("the operator's own Deployment: present %v, deletes %q, PATCHes %d (want %d)", ok, at.api.Deletes, len(at.api.Patches), patches)
	}

	at.edit(func(s *model.ClusterSpec) { s.Addons.CoreDNS.Enabled = nil })
	var out bytes.Buffer
	_, err := at.cs.Update(at.ctx, demo, UpdateOptions{Out: &out, Logger: slog.New(slog.DiscardHandler), Kubeconfig: at.kubeconfig})
	if err == nil || !strings.Contains(err.Error(), "Deployment/kube-system/coredns exists and is not kubeup's (it has no label kubeup.dev/addon=coredns)") ||
		!strings.Contains(err.Error(), "spec.addons.coreDNS.enabled: false") {
		t.Errorf("enabling the addon over the operator's own Deployment: %v, want a refusal naming it", err)
	}
	if len(at.api.Patches) != patches {
		t.Errorf("the refused update sent %d PATCHes", len(at.api.Patches)-patches)
	}
}

// TestAddonsWait: with no kubeconfig, with no context for the cluster, with an API that refuses connections and
// with one that never answers, an update (dry run and apply) still brings the cloud up, applies no addon, and its
// report says on one line that the addons wait, why, and how to apply them; a JSON report stays one JSON plan.
func TestAddonsWait(t *testing.T) {
	defer func(d time.Duration) { addonProbeTimeout = d }(addonProbeTimeout)
	addonProbeTimeout = 300 * time.Millisecond
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close() // accepts (the kernel's backlog) and never answers
	for _, tt := range []struct {
		name  string
		setup func(at *addonTest)
		why   string
	}{
		{"no kubeconfig", func(at *addonTest) { at.kubeconfig = filepath.Join(t.TempDir(), "none") }, "there is no kubeconfig "},
		{"no context", func(at *addonTest) {
			os.WriteFile(at.kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
		}, "has no context " + demo},
		{"API down", func(at *addonTest) { at.api.Close() }, "the API does not answer"},
		{"API hangs", func(at *addonTest) { at.writeKubeconfig("https://" + hung.Addr().String()) }, "within 300ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at := newAddonTest(t)
			tt.setup(at)
			for _, apply := range []bool{false, true} {
				plan, text, js := at.update(apply)
				var lines []string
				for _, l := range strings.Split(text, "\n") {
					if strings.HasPrefix(l, "Addons wait: ") {
						lines = append(lines, l)
					}
				}
				if len(lines) != 1 || !strings.Contains(lines[0], tt.why) ||
					!strings.Contains(lines[0], "`kubeup export kubeconfig "+demo+"`, then `kubeup update cluster "+demo+" --yes`") ||
					!strings.Contains(lines[0], "`kubeup validate cluster "+demo+"` passes") {
					t.Errorf("apply %v: want one line saying the addons wait (%s) and how to apply them:\n%s", apply, tt.why, text)
				}
				if got := addonChanges(plan); len(got) != 0 || (!apply && plan.Empty()) {
					t.Errorf("apply %v: addon changes %q (want none), %d changes in all (want the cloud's)", apply, got, len(plan.Changes))
				}
				if !apply {
					decodePlan(t, js)
				}
			}
			if len(at.api.Patches) != 0 {
				t.Errorf("PATCHes %q while the addons wait", at.api.Patches)
			}
			if _, err := at.cs.Get(at.ctx, demo); err != nil {
				t.Fatal(err)
			}
		})
	}
}
