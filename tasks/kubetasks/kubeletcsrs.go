package kubetasks

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
)

// ApproverWorld is a world that reaches the API as the CSR approver: an identity of its own, whose RBAC allows
// reading requests and Nodes and approving or denying kubelets' requests, nothing else.
type ApproverWorld interface {
	ApproverAPI() *Client
}

// KubeletCSRs decides every undecided certificate request of the kubelet signers (SignerKubeletClient,
// SignerKubeletServing) by Approver's table: Find lists the requests and the Nodes and decides each, Undecided
// says what it would do ("<request>: approve|deny: <why>"); Render approves or denies each, with the reason. A
// request another approver decided meanwhile (409) is left as it is. The task's Undecided is always empty:
// a request is a change until it is decided.
type KubeletCSRs[C ApproverWorld] struct {
	// Name names the task.
	Name string
	// Approver is the decision table's settings.
	Approver *Approver `kubeup:"-"`
	// Undecided is, in the found task, what the approver does with each undecided request.
	Undecided []string `kubeup:"nilempty"`
	// After lists tasks to run first (the approver's RBAC).
	After []engine.Task `kubeup:"-"`

	decisions []Decision
	raw       map[string]map[string]any
}

var _ engine.Renderer[*KubeletCSRs[ApproverWorld], ApproverWorld] = (*KubeletCSRs[ApproverWorld])(nil)

func (k *KubeletCSRs[C]) Key() engine.Key     { return engine.Key{Type: "KubeletCSRs", Name: k.Name} }
func (k *KubeletCSRs[C]) Deps() []engine.Task { return k.After }

const (
	csrPath  = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	nodePath = "/api/v1/nodes"
)

type apiList struct {
	Items []map[string]any `json:"items"`
}

// Find lists the requests and the Nodes, and decides every undecided request of a kubelet signer.
func (k *KubeletCSRs[C]) Find(ctx context.Context, world C) (*KubeletCSRs[C], error) {
	api := world.ApproverAPI()
	var csrs, nodeList apiList
	if err := api.Get(ctx, csrPath, &csrs); err != nil {
		if IsForbidden(err) {
			// The approver's ClusterRoleBinding is applied in the same round; RBAC follows within seconds.
			return nil, engine.NotReady(fmt.Errorf("the approver may not list requests yet (its RBAC is applied in this round): %w", err))
		}
		return nil, err
	}
	if err := api.Get(ctx, nodePath, &nodeList); err != nil {
		if IsForbidden(err) {
			return nil, engine.NotReady(fmt.Errorf("the approver may not list Nodes yet: %w", err))
		}
		return nil, err
	}
	nodes := map[string][]NodeAddress{}
	for _, n := range nodeList.Items {
		name, _ := dig(n, "metadata", "name").(string)
		var addrs []NodeAddress
		list, _ := dig(n, "status", "addresses").([]any)
		for _, a := range list {
			m, _ := a.(map[string]any)
			t, _ := m["type"].(string)
			v, _ := m["address"].(string)
			addrs = append(addrs, NodeAddress{Type: t, Address: v})
		}
		nodes[name] = addrs
	}
	var all []*CSR
	raw := map[string]map[string]any{}
	for _, item := range csrs.Items {
		c := csrOf(item)
		all = append(all, c)
		raw[c.Name] = item
	}
	actual := &KubeletCSRs[C]{Name: k.Name, Approver: k.Approver, After: k.After, raw: raw}
	for _, c := range all {
		if c.Approved || c.Denied || (c.SignerName != SignerKubeletClient && c.SignerName != SignerKubeletServing) {
			continue
		}
		d := k.Approver.Decide(ctx, c, nodes, all)
		actual.decisions = append(actual.decisions, d)
		actual.Undecided = append(actual.Undecided, d.String())
	}
	slices.Sort(actual.Undecided)
	return actual, nil
}

func (k *KubeletCSRs[C]) CheckChanges(actual, expected, changes *KubeletCSRs[C]) error {
	if expected.Approver == nil {
		return fmt.Errorf("kubelet CSRs %s: Approver is required", expected.Name)
	}
	return nil
}

// Render approves or denies each undecided request as Find decided, through its approval subresource.
func (k *KubeletCSRs[C]) Render(ctx context.Context, world C, actual, expected, changes *KubeletCSRs[C]) error {
	if actual == nil {
		return nil
	}
	api := world.ApproverAPI()
	var failed []string
	for _, d := range actual.decisions {
		obj := actual.raw[d.CSR]
		typ, reason := "Denied", "KubeupDenied"
		if d.Approve {
			typ, reason = "Approved", "KubeupApproved"
		}
		status, _ := obj["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
			obj["status"] = status
		}
		conds, _ := status["conditions"].([]any)
		status["conditions"] = append(conds, map[string]any{
			"type": typ, "status": "True", "reason": reason, "message": d.Reason,
			"lastUpdateTime": time.Now().UTC().Format(time.RFC3339),
		})
		err := api.Put(ctx, csrPath+"/"+d.CSR+"/approval", obj, nil)
		switch {
		case err == nil:
			engine.Logger(ctx).Info("kubelet certificate request decided", "csr", d.CSR, "approved", d.Approve, "reason", d.Reason)
		case IsConflict(err) || IsNotFound(err):
			// Another control-plane node's approver decided it, or it went: nothing left to do here.
		default:
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("deciding kubelet certificate requests: %s", strings.Join(failed, "; "))
	}
	return nil
}

func csrOf(item map[string]any) *CSR {
	str := func(v any) string { s, _ := v.(string); return s }
	c := &CSR{
		Name:       str(dig(item, "metadata", "name")),
		SignerName: str(dig(item, "spec", "signerName")),
		Username:   str(dig(item, "spec", "username")),
	}
	if t, err := time.Parse(time.RFC3339, str(dig(item, "metadata", "creationTimestamp"))); err == nil {
		c.Created = t
	}
	if req, err := base64.StdEncoding.DecodeString(str(dig(item, "spec", "request"))); err == nil {
		c.Request = req
	}
	for _, g := range asList(dig(item, "spec", "groups")) {
		c.Groups = append(c.Groups, str(g))
	}
	for _, u := range asList(dig(item, "spec", "usages")) {
		c.Usages = append(c.Usages, str(u))
	}
	if ann, ok := dig(item, "metadata", "annotations").(map[string]any); ok {
		c.Annotations = map[string]string{}
		for k, v := range ann {
			c.Annotations[k] = str(v)
		}
	}
	for _, cond := range asList(dig(item, "status", "conditions")) {
		m, _ := cond.(map[string]any)
		if str(m["status"]) == "False" {
			continue
		}
		switch str(m["type"]) {
		case "Approved":
			c.Approved = true
		case "Denied", "Failed":
			c.Denied = true
		}
	}
	return c
}

func asList(v any) []any { l, _ := v.([]any); return l }

// dig returns the value at the path of keys in nested mappings; nil when there is none.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
