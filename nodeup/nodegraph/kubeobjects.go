package nodegraph

import (
	"encoding/base64"
	"errors"
	"fmt"
	"kubeup.dev/kubeup/model"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// The objects kubeup keeps in the cluster for kubelets' credentials (docs/pki.md#kubelet-credentials), which
// protokube applies on every control-plane node whose kube-apiserver is ready.

// Names of those objects.
const (
	// BootstrapGroup is the group kubeup's bootstrap token adds (auth-extra-groups): only this token's requests
	// may ask for a kubelet's certificate.
	BootstrapGroup = "system:bootstrappers:kubeup:nodes"
	// FieldManager is kubeup's field manager in server-side apply: protokube's and kubeup update cluster's.
	FieldManager = kubetasks.FieldManager
	// BootstrapTokenLabel marks the bootstrap token Secrets kubeup made (value "true"): one not of the current
	// token is deleted.
	BootstrapTokenLabel = "kubeup.dev/bootstrap-token"
)

// approverWait is how long the approver waits for its RBAC to be in effect.
const approverWait = time.Minute

// KubeWorld is the world of the objects' tasks: the API as protokube, and as the CSR approver.
type KubeWorld interface {
	kubetasks.World
	kubetasks.ApproverWorld
}

// BootstrapToken returns the bootstrap token a node configuration carries in its bootstrap kubeconfig
// (spec.kubelet.bootstrapKubeconfig): what protokube makes the token's Secret of.
func BootstrapToken(nc *model.NodeConfig) (*pkitasks.Issued, error) {
	if nc.Cluster == nil || nc.Cluster.Spec.Kubelet == nil || nc.Cluster.Spec.Kubelet.BootstrapKubeconfig == "" {
		return nil, errors.New("the node configuration names no bootstrap kubeconfig (spec.kubelet.bootstrapKubeconfig)")
	}
	p := nc.Cluster.Spec.Kubelet.BootstrapKubeconfig
	for _, f := range nc.Files {
		if f.Path != p {
			continue
		}
		var kc struct {
			Users []struct {
				User struct {
					Token string `json:"token"`
				} `json:"user"`
			} `json:"users"`
		}
		if err := yaml.Unmarshal([]byte(f.Contents), &kc); err != nil || len(kc.Users) != 1 {
			return nil, fmt.Errorf("the bootstrap kubeconfig %s of the node configuration does not read as a kubeconfig of one user", p)
		}
		is, err := pkitasks.DecodeToken([]byte(kc.Users[0].User.Token))
		if err != nil {
			return nil, fmt.Errorf("the bootstrap kubeconfig %s of the node configuration: %w", p, err)
		}
		return is, nil
	}
	return nil, fmt.Errorf("the node configuration carries no bootstrap kubeconfig %s: write it again with `kubeup update cluster --yes`", p)
}

// NodeRoutesRole names the ClusterRole, and its binding to every node, that lets a node list the Nodes (their
// pod ranges and addresses) with its own credentials: a local cluster's worker routes their pod ranges.
const NodeRoutesRole = "kubeup:node-routes"

// AddKubeObjects adds to g the objects kubelets' credentials need, and the decision of kubelets' certificate
// requests (kubetasks.KubeletCSRs) once the approver's RBAC is applied:
//   - the bootstrap token's Secret (kube-system/bootstrap-token-<id>), whose token adds the group BootstrapGroup,
//     and the deletion of the Secrets of tokens kubeup replaced (labelled BootstrapTokenLabel);
//   - ClusterRoleBinding kubeup:kubelet-bootstrap: BootstrapGroup may create certificate requests
//     (system:node-bootstrapper). It is not bound to the built-in auto-approval of node client requests: kubeup's
//     approver decides those;
//   - ClusterRoleBinding kubeup:kubelet-renewal: every node may renew its own client certificate
//     (system:certificates.k8s.io:certificatesigningrequests:selfnodeclient, approved by kube-controller-manager);
//   - ClusterRole and ClusterRoleBinding kubeup:node-routes (NodeRoutesRole), when a local cluster's workers keep
//     their pod routes (model.NodeRunsProtokube): every node (kubetasks.NodesGroup) may list the Nodes;
//   - ClusterRole and ClusterRoleBinding kubeup:csr-approver: the approver's identity (CSRApproverUser) reads
//     requests and Nodes, and approves or denies requests of the two kubelet signers, nothing else.
func AddKubeObjects[C KubeWorld](g *engine.Graph[C], nc *model.NodeConfig, proof kubetasks.IdentityProof) error {
	token, err := BootstrapToken(nc)
	if err != nil {
		return err
	}
	id, secret, _ := token.TokenParts()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	add := func(m map[string]any, resource string, isSecret bool, after ...engine.Task) (*kubetasks.Object[C], error) {
		o, err := kubetasks.NewObject[C](m, resource, isSecret)
		if err != nil {
			return nil, err
		}
		o.After = after
		return engine.Add(g, o), nil
	}
	tokenSecret, err := add(map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
		"metadata": map[string]any{"name": "bootstrap-token-" + id, "namespace": "kube-system",
			"labels": map[string]any{BootstrapTokenLabel: "true"}},
		"data": map[string]any{
			"token-id": b64(id), "token-secret": b64(secret.Reveal()),
			"usage-bootstrap-authentication": b64("true"), "auth-extra-groups": b64(BootstrapGroup),
			"description": b64("kubeup: kubelets of cluster " + nc.Cluster.Metadata.Name + " ask for their certificates with it"),
		},
	}, "secrets", true)
	if err != nil {
		return err
	}
	// A replaced token's Secret goes once the new one is there: a token taken out of the keystore stops working.
	engine.Add(g, &kubetasks.Pruned[C]{
		Name: "Secret/kube-system/bootstrap-token", ListPath: "/api/v1/namespaces/kube-system/secrets",
		Selector: BootstrapTokenLabel + "=true", Keep: []string{"bootstrap-token-" + id}, After: []engine.Task{tokenSecret},
	})
	binding := func(name, role, kind, subject string) map[string]any {
		return map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": name},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}},
		}
	}
	// A worker of a local cluster keeps its routes to the other Nodes' pod ranges (model.NodeRunsProtokube): it
	// lists the Nodes with kubelet's credentials. The Node authorizer lets a node read its own Node only (since
	// Kubernetes 1.32, AuthorizeNodeWithSelectors): RBAC lets the nodes list them all, as kube-proxy's identity on
	// the same node already may (system:node-proxier).
	if model.NodeRunsProtokube(&nc.Cluster.Spec, model.RoleNode) {
		role, err := add(map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": NodeRoutesRole},
			"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"list"}}},
		}, "clusterroles", false)
		if err != nil {
			return err
		}
		if _, err := add(binding(NodeRoutesRole, NodeRoutesRole, "Group", kubetasks.NodesGroup), "clusterrolebindings", false, role); err != nil {
			return err
		}
	}
	for _, b := range []map[string]any{
		binding("kubeup:kubelet-bootstrap", "system:node-bootstrapper", "Group", BootstrapGroup),
		binding("kubeup:kubelet-renewal", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "Group", kubetasks.NodesGroup),
	} {
		if _, err := add(b, "clusterrolebindings", false); err != nil {
			return err
		}
	}
	role, err := add(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "kubeup:csr-approver"},
		"rules": []any{
			map[string]any{"apiGroups": []any{"certificates.k8s.io"}, "resources": []any{"certificatesigningrequests"}, "verbs": []any{"get", "list", "watch"}},
			map[string]any{"apiGroups": []any{"certificates.k8s.io"}, "resources": []any{"certificatesigningrequests/approval"}, "verbs": []any{"update"}},
			map[string]any{"apiGroups": []any{"certificates.k8s.io"}, "resources": []any{"signers"},
				"resourceNames": []any{kubetasks.SignerKubeletClient, kubetasks.SignerKubeletServing}, "verbs": []any{"approve"}},
			map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"get", "list"}},
		},
	}, "clusterroles", false)
	if err != nil {
		return err
	}
	bound, err := add(binding("kubeup:csr-approver", "kubeup:csr-approver", "User", model.CSRApproverUser), "clusterrolebindings", false, role)
	if err != nil {
		return err
	}
	s := &nc.Cluster.Spec
	var reserved []string
	if s.API != nil {
		reserved = append(reserved, strings.ToLower(s.API.PublicName), strings.ToLower(s.API.InternalName))
	}
	reserved = append(reserved, "kubernetes", "kubernetes.default", "kubernetes.default.svc")
	if s.Networking != nil && s.Networking.ClusterDomain != "" {
		reserved = append(reserved, "kubernetes.default.svc."+s.Networking.ClusterDomain)
	}
	// Until the approver's binding is in effect (it is applied in the same run; RBAC follows within seconds),
	// listing requests is forbidden and retried: for a minute, not the engine's ten (a dry run before the first
	// apply would wait for a binding it does not make).
	engine.Add(g, &kubetasks.KubeletCSRs[C]{
		Name:     "kubelet",
		Approver: &kubetasks.Approver{TokenID: id, Reserved: reserved, Proof: proof},
		After:    []engine.Task{bound},
	}, engine.WithDeadline(approverWait))
	return nil
}
