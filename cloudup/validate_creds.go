package cloudup

import (
	"fmt"

	"kubeup.dev/kubeup/model"
)

// credentialWarnings names what kubelets' credentials rest on where a cloud could prove more (docs/pki.md): on
// aws and gce a kubelet bootstraps with the cluster's shared bootstrap token and no proof of its machine's
// identity, and, when the control plane's machines share the nodes' cloud identity, every node can read the
// control plane's configuration and so every key it holds. A warning: the cluster works, and is as safe as the
// state store's access policy.
func credentialWarnings(c *model.Cluster) []ValidationFailure {
	var out []ValidationFailure
	name := c.Metadata.Name
	s := &c.Spec
	if s.CloudProvider != model.CloudAWS && s.CloudProvider != model.CloudGCE {
		return nil
	}
	out = append(out, ValidationFailure{Kind: "KubeletCredentials", Name: name, Message: fmt.Sprintf(
		"kubelets bootstrap with the cluster's shared bootstrap token and no proof of their machine's identity (no signed instance identity on %s yet): "+
			"whoever reads a node's disk or %s/nodeup/ can obtain a certificate for a node name no Node has yet, never for one that exists (docs/pki.md)",
		s.CloudProvider, name)})
	shared := ""
	switch {
	case s.CloudProvider == model.CloudAWS && s.AWS != nil && (s.AWS.ControlPlaneInstanceProfile == "" || s.AWS.ControlPlaneInstanceProfile == s.AWS.InstanceProfile):
		shared = fmt.Sprintf("spec.aws.controlPlaneInstanceProfile is the nodes' instance profile (%s)", s.AWS.InstanceProfile)
	case s.CloudProvider == model.CloudGCE && s.GCE != nil:
		shared = fmt.Sprintf("every machine runs as service account %s", s.GCE.ServiceAccount)
	}
	if shared != "" {
		out = append(out, ValidationFailure{Kind: "KubeletCredentials", Name: name, Message: shared + ": a node can read " +
			model.RoleConfigPath(name, model.RoleControlPlane) + ", which holds every control-plane key (the kubelet CA's among them); " +
			"give the control plane an identity of its own and the nodes read access to their own configurations only (docs/pki.md)"})
	}
	return out
}
