package model_test

import (
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

type kubeObjectsWorld struct{}

func (kubeObjectsWorld) KubeAPI() *kubetasks.Client     { return nil }
func (kubeObjectsWorld) ApproverAPI() *kubetasks.Client { return nil }

// TestAddKubeObjects: the objects of kubelet credentials, by key, the token's Secret named by its id and kept out
// of plans, and the approver after its binding; a configuration without its bootstrap kubeconfig, or with one
// that holds no token, is refused, naming the file.
func TestAddKubeObjects(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	nc := model.NewNodeConfig(c, model.FindInstanceGroup(igs, "control-plane-a"))
	tok, err := pkitasks.IssueToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.AddKeystoreFiles(model.Issued{model.KeypairBootstrapToken: {Token: tok.Token}}); err != nil {
		t.Fatal(err)
	}
	id, secret, _ := tok.TokenParts()
	g := engine.NewGraph[kubeObjectsWorld]()
	if err := nodegraph.AddKubeObjects(g, nc, nil); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, task := range g.Tasks() {
		keys = append(keys, task.Key().String())
		if o, ok := task.(*kubetasks.Object[kubeObjectsWorld]); ok && o.Manifest != nil && strings.Contains(*o.Manifest, secret.Reveal()) {
			t.Errorf("%s shows the token's secret", task.Key())
		}
		if a, ok := task.(*kubetasks.KubeletCSRs[kubeObjectsWorld]); ok {
			if a.Approver.TokenID != id || len(a.After) != 1 || a.After[0].Key().Name != "ClusterRoleBinding/kubeup:csr-approver" {
				t.Errorf("the approver: token %q (want %q), after %v", a.Approver.TokenID, id, a.After)
			}
		}
	}
	slices.Sort(keys)
	// A local cluster's workers list the Nodes for their pod routes: kubeup:node-routes.
	want := []string{
		"KubeObject/ClusterRole/kubeup:csr-approver", "KubeObject/ClusterRole/kubeup:node-routes", "KubeObject/ClusterRoleBinding/kubeup:csr-approver",
		"KubeObject/ClusterRoleBinding/kubeup:kubelet-bootstrap", "KubeObject/ClusterRoleBinding/kubeup:kubelet-renewal", "KubeObject/ClusterRoleBinding/kubeup:node-routes",
		"KubeObject/Secret/kube-system/bootstrap-token-" + id, "KubePruned/Secret/kube-system/bootstrap-token", "KubeletCSRs/kubelet",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("tasks %v, want %v", keys, want)
	}

	if err := nc.AddKeystoreFiles(model.Issued{}); err != nil {
		t.Fatal(err)
	}
	if err := nodegraph.AddKubeObjects(engine.NewGraph[kubeObjectsWorld](), nc, nil); err == nil || !strings.Contains(err.Error(), c.Spec.Kubelet.BootstrapKubeconfig) {
		t.Errorf("a bootstrap kubeconfig without a token: %v", err)
	}
	nc.Files = nil
	if err := nodegraph.AddKubeObjects(engine.NewGraph[kubeObjectsWorld](), nc, nil); err == nil || !strings.Contains(err.Error(), "carries no bootstrap kubeconfig") {
		t.Errorf("no bootstrap kubeconfig: %v", err)
	}
}

// TestAddKubeObjectsNodeRoutes: the nodes may list the Nodes (kubeup:node-routes) only where the workers route the
// pod ranges themselves (a local cluster); on aws and gce the cloud routes them, and the nodes get no such grant.
func TestAddKubeObjectsNodeRoutes(t *testing.T) {
	for cloud, want := range map[string]bool{model.CloudLocal: true, model.CloudAWS: false, model.CloudGCE: false} {
		c, igs := model.CompleteSpec(t, cloud, 1)
		var cp *model.InstanceGroup
		for _, ig := range igs {
			if ig.Spec.Role == model.RoleControlPlane {
				cp = ig
			}
		}
		nc := model.NewNodeConfig(c, cp)
		tok, err := pkitasks.IssueToken()
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.AddKeystoreFiles(model.Issued{model.KeypairBootstrapToken: {Token: tok.Token}}); err != nil {
			t.Fatal(err)
		}
		g := engine.NewGraph[kubeObjectsWorld]()
		if err := nodegraph.AddKubeObjects(g, nc, nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ClusterRole/" + nodegraph.NodeRoutesRole, "ClusterRoleBinding/" + nodegraph.NodeRoutesRole} {
			if _, ok := g.Lookup(engine.Key{Type: "KubeObject", Name: name}); ok != want {
				t.Errorf("%s: %s in the graph: %t, want %t", cloud, name, ok, want)
			}
		}
	}
}
