package cloudup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"kubeup.dev/kubeup/model"
)

// NodeLabelInstanceGroup is the label kubelet registers a node with (nodeup's --node-labels): the node's
// instance group. It is how validation counts each group's nodes.
const NodeLabelInstanceGroup = "kubeup.dev/instancegroup"

// controlPlaneComponents are the static pods every control-plane node runs besides etcd, by pod name.
var controlPlaneComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// ValidateOptions say where validation reads the cluster.
type ValidateOptions struct {
	// Kubeconfig is the file of `kubeup export kubeconfig`; "" is KubeconfigPath()'s. Its context named after
	// the cluster is used.
	Kubeconfig string
	// Resolver resolves the cluster's DNS names (nil: the system's).
	Resolver hostResolver
}

// Validation is what ValidateCluster found. Healthy is true when there is no failure.
type Validation struct {
	Cluster  string              `json:"cluster"`
	Healthy  bool                `json:"healthy"`
	Failures []ValidationFailure `json:"failures"`
	// Warnings are what validation names without failing: gaps of the design the cluster runs with.
	Warnings []ValidationFailure `json:"warnings"`
	Nodes    []ValidatedNode     `json:"nodes"`
	Etcd     []MemberHealth      `json:"etcdMembers"`
}

// ValidationFailure is one thing wrong: the object (Kind, Name) and what is wrong with it.
type ValidationFailure struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

func (f ValidationFailure) String() string { return f.Kind + " " + f.Name + ": " + f.Message }

// ValidatedNode is one node of the API.
type ValidatedNode struct {
	Name          string   `json:"name"`
	InstanceGroup string   `json:"instanceGroup"`
	Role          string   `json:"role"`
	Ready         bool     `json:"ready"`
	Addresses     []string `json:"addresses"`
}

// validator holds what one validation reads the cluster with.
type validator struct {
	c    *model.Cluster
	igs  []*model.InstanceGroup
	api  *apiClient
	etcd *http.Client
	dns  hostResolver
}

// ValidateCluster checks a running cluster through its API, with the credentials of the exported kubeconfig,
// through etcd's client port, with kube-apiserver's etcd client certificate from the keystore, and through DNS:
//
//   - every instance group has at least its minSize of nodes Ready (nodes by the label NodeLabelInstanceGroup);
//   - every Ready control-plane node runs kube-apiserver, kube-controller-manager and kube-scheduler (their mirror
//     pods in kube-system, Running), and runs etcd for each member whose DNS name points at it;
//   - every etcd member of the spec answers healthy on /health at its DNS name and client port;
//   - the API's and the members' DNS names resolve, only to addresses of Ready control-plane nodes.
//
// An error is returned only when validation could not run (no kubeconfig, no keystore); what is wrong with the
// cluster is in the Validation's failures.
func (cs *Clusters) ValidateCluster(ctx context.Context, name string, o ValidateOptions) (*Validation, error) {
	v, err := cs.newValidator(ctx, name, o)
	if err != nil {
		return nil, err
	}
	return v.validate(ctx), nil
}

func (cs *Clusters) newValidator(ctx context.Context, name string, o ValidateOptions) (*validator, error) {
	stored, err := cs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	c, igs, err := cs.Complete(stored)
	if err != nil {
		return nil, err
	}
	api, err := newAPIClient(o.Kubeconfig, name)
	if err != nil {
		return nil, err
	}
	var dns hostResolver = net.DefaultResolver
	if o.Resolver != nil {
		dns = o.Resolver
	}
	api.resolver = dns
	etcd, err := cs.etcdClient(ctx, name, dns)
	if err != nil {
		return nil, err
	}
	return &validator{c: c, igs: igs, api: api, etcd: etcd, dns: dns}, nil
}

func (v *validator) validate(ctx context.Context) *Validation {
	out := &Validation{Cluster: v.c.Metadata.Name, Failures: []ValidationFailure{}, Nodes: []ValidatedNode{},
		Warnings: append([]ValidationFailure{}, credentialWarnings(v.c)...)}
	fail := func(kind, name, format string, args ...any) {
		out.Failures = append(out.Failures, ValidationFailure{Kind: kind, Name: name, Message: fmt.Sprintf(format, args...)})
	}
	nodes, err := v.api.nodes(ctx)
	apiOK := err == nil
	if err != nil {
		fail("API", v.api.server, "%v", err)
	}
	pods, err := v.api.kubeSystemPods(ctx)
	podsOK := err == nil
	if err != nil {
		fail("API", v.api.server, "%v", err)
	}
	roles := map[string]string{}
	for _, ig := range v.igs {
		roles[ig.Metadata.Name] = ig.Spec.Role
	}
	byAddress := map[string]ValidatedNode{} // addresses of Ready control-plane nodes
	for _, n := range nodes {
		vn := ValidatedNode{Name: n.Metadata.Name, InstanceGroup: n.Metadata.Labels[NodeLabelInstanceGroup], Addresses: []string{}}
		vn.Role = roles[vn.InstanceGroup]
		ready := condition(n.Status.Conditions, "Ready")
		vn.Ready = ready != nil && ready.Status == "True"
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" || a.Type == "ExternalIP" {
				vn.Addresses = append(vn.Addresses, a.Address)
			}
		}
		out.Nodes = append(out.Nodes, vn)
		switch {
		case vn.InstanceGroup == "":
			fail("Node", vn.Name, "has no label %s: kubeup cannot tell its instance group", NodeLabelInstanceGroup)
		case vn.Role == "":
			fail("Node", vn.Name, "is labelled %s=%s, an instance group cluster %s does not have", NodeLabelInstanceGroup, vn.InstanceGroup, v.c.Metadata.Name)
		case !vn.Ready && ready == nil:
			fail("Node", vn.Name, "not Ready: it reports no Ready condition")
		case !vn.Ready:
			fail("Node", vn.Name, "not Ready: %s %s", ready.Reason, ready.Message)
		case vn.Role == model.RoleControlPlane:
			for _, a := range vn.Addresses {
				byAddress[a] = vn
			}
		}
	}
	for _, ig := range v.igs {
		if !apiOK {
			break // the nodes are not known: the API's failure says why
		}
		want, ready := int32(1), int32(0)
		if ig.Spec.MinSize != nil {
			want = *ig.Spec.MinSize
		}
		for _, n := range out.Nodes {
			if n.InstanceGroup == ig.Metadata.Name && n.Ready {
				ready++
			}
		}
		if ready < want {
			fail("InstanceGroup", ig.Metadata.Name, "%d nodes Ready, want at least %d (its minSize)", ready, want)
		}
	}
	mirror := map[string]apiPod{}
	for _, p := range pods {
		if _, ok := p.Metadata.Annotations["kubernetes.io/config.mirror"]; ok {
			mirror[p.Metadata.Name] = p
		}
	}
	checkPod := func(pod, node string) {
		if !podsOK {
			return // the pods are not known: the API's failure says why
		}
		name := pod + "-" + node
		p, ok := mirror[name]
		switch {
		case !ok:
			fail("Pod", "kube-system/"+name, "%s does not run on control-plane node %s: no mirror pod", pod, node)
		case p.Spec.NodeName != node:
			fail("Pod", "kube-system/"+name, "is on node %q, not %s", p.Spec.NodeName, node)
		case p.Metadata.DeletionTimestamp != nil:
			fail("Pod", "kube-system/"+name, "is being deleted (since %s)", *p.Metadata.DeletionTimestamp)
		case p.Status.Phase != "Running":
			fail("Pod", "kube-system/"+name, "is %s, not Running", p.Status.Phase)
		default:
			if c := condition(p.Status.Conditions, "Ready"); c != nil && c.Status != "True" {
				fail("Pod", "kube-system/"+name, "is Running but not Ready: %s %s", c.Reason, c.Message)
			}
		}
	}
	for _, n := range out.Nodes {
		if n.Role == model.RoleControlPlane && n.Ready {
			for _, comp := range controlPlaneComponents {
				checkPod(comp, n.Name)
			}
		}
	}
	out.Etcd = v.etcdMembers(ctx)
	for _, m := range out.Etcd {
		if !m.Healthy {
			fail("EtcdMember", m.String(), "%s", m.Why)
		}
	}
	// DNS: every name resolves, and only to Ready control-plane nodes; each member runs on the node its name
	// points at.
	type record struct{ name, etcdCluster string }
	var records []record
	if a := v.c.Spec.API; a != nil {
		records = append(records, record{a.PublicName, ""}, record{a.InternalName, ""})
	}
	for _, e := range v.c.Spec.EtcdClusters {
		for _, m := range e.Members {
			records = append(records, record{model.EtcdMemberDNSName(v.c.Metadata.Name, e.Name, m.Name), e.Name})
		}
	}
	for _, r := range records {
		if r.name == "" {
			continue
		}
		addrs, err := v.dns.LookupHost(ctx, r.name)
		if err != nil {
			fail("DNSRecord", r.name, "does not resolve: %v", err)
			continue
		}
		slices.Sort(addrs)
		for _, a := range addrs {
			n, ok := byAddress[a]
			if !ok && !apiOK {
				continue // the nodes are not known
			}
			if !ok {
				fail("DNSRecord", r.name, "points at %s, which is not the address of a Ready control-plane node", a)
				continue
			}
			if r.etcdCluster != "" {
				checkPod("etcd-"+r.etcdCluster, n.Name)
			}
		}
	}
	out.Healthy = len(out.Failures) == 0
	return out
}

// etcdMembers asks each member of the spec for /health at its DNS name and client port, over TLS with
// kube-apiserver's etcd client certificate.
func (v *validator) etcdMembers(ctx context.Context) []MemberHealth {
	var out []MemberHealth
	for _, e := range v.c.Spec.EtcdClusters {
		for _, m := range e.Members {
			host := model.EtcdMemberDNSName(v.c.Metadata.Name, e.Name, m.Name)
			mh := MemberHealth{EtcdCluster: e.Name, Member: m.Name}
			if addrs, err := v.dns.LookupHost(ctx, host); err == nil && len(addrs) > 0 {
				mh.Holder = addrs[0]
			}
			endpoint := "https://" + net.JoinHostPort(host, strconv.Itoa(int(e.ClientPort))) + "/health"
			if err := etcdHealth(ctx, v.etcd, endpoint); err != nil {
				mh.Why = err.Error()
			} else {
				mh.Healthy = true
			}
			out = append(out, mh)
		}
	}
	return out
}

// etcdHealth asks one member's /health: healthy when it answers 200 with {"health":"true"}.
func etcdHealth(ctx context.Context, client *http.Client, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != http.StatusOK || h.Health != "true" {
		return fmt.Errorf("%s answers %s: %s", endpoint, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// WriteText writes the validation as kops does: the nodes, then each failure on one line, then the verdict.
func (val *Validation) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Validating cluster %s\n\n", val.Cluster)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tINSTANCE GROUP\tROLE\tREADY")
	for _, n := range val.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\n", n.Name, n.InstanceGroup, n.Role, n.Ready)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, m := range val.Etcd {
		state := "healthy"
		if !m.Healthy {
			state = "unhealthy"
		}
		fmt.Fprintf(w, "etcd member %s: %s\n", m, state)
	}
	fmt.Fprintln(w)
	if len(val.Warnings) > 0 {
		fmt.Fprintf(w, "WARNINGS (%d)\n", len(val.Warnings))
		for _, f := range val.Warnings {
			fmt.Fprintln(w, f.String())
		}
		fmt.Fprintln(w)
	}
	if val.Healthy {
		_, err := fmt.Fprintf(w, "Your cluster %s is ready\n", val.Cluster)
		return err
	}
	fmt.Fprintf(w, "VALIDATION ERRORS (%d)\n", len(val.Failures))
	for _, f := range val.Failures {
		fmt.Fprintln(w, f.String())
	}
	_, err := fmt.Fprintf(w, "\nValidation of cluster %s failed\n", val.Cluster)
	return err
}

// apiHealth is the Health of a rolling update through the API, etcd and DNS: validate cluster's checks.
type apiHealth struct{ v *validator }

func (cs *Clusters) apiHealth(ctx context.Context, c *model.Cluster, kubeconfig string) (Health, error) {
	v, err := cs.newValidator(ctx, c.Metadata.Name, ValidateOptions{Kubeconfig: kubeconfig})
	if err != nil {
		return nil, fmt.Errorf("%w (or, for a cluster whose API cannot be reached, take the checks from the cloud with --cloudonly)", err)
	}
	return apiHealth{v}, nil
}

func (h apiHealth) Basis() string {
	return "the API (nodes Ready, static pods) and etcd's own /health of each member at its DNS name (validate cluster)"
}

func (h apiHealth) Etcd(ctx context.Context) ([]MemberHealth, error) {
	return h.v.etcdMembers(ctx), nil
}

func (h apiHealth) Validate(ctx context.Context) ([]string, error) {
	val := h.v.validate(ctx)
	var out []string
	for _, f := range val.Failures {
		out = append(out, f.String())
	}
	return out, nil
}
