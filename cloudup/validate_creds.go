package cloudup

import (
	"fmt"

	"kubeup.dev/kubeup/model"
)

// credentialWarnings names what kubelets' credentials rest on where a cloud could prove more (docs/pki.md): on
// aws and gce a kubelet bootstraps with the cluster's shared bootstrap token and no proof of its machine's
// identity, and, when the control plane's machines share the nodes' cloud identity, every node can read the
// control plane's configuration and so every key it holds. A warning: the cluster works, and is as safe as the
// state store's access policy. Each provider says what it warns of (Provider.CredentialWarnings).
func credentialWarnings(c *model.Cluster) []ValidationFailure {
	if p := providers[c.Spec.CloudProvider]; p != nil {
		return p.CredentialWarnings(c)
	}
	return nil
}

// SharedTokenWarnings are the credential warnings of a cloud whose kubelets bootstrap with the shared token alone;
// shared, when not "", says how the control plane's machines share the nodes' identity.
func SharedTokenWarnings(c *model.Cluster, shared string) []ValidationFailure {
	name := c.Metadata.Name
	out := []ValidationFailure{{Kind: "KubeletCredentials", Name: name, Message: fmt.Sprintf(
		"kubelets bootstrap with the cluster's shared bootstrap token and no proof of their machine's identity (no signed instance identity on %s yet): "+
			"whoever reads a node's disk or %s/nodeup/ can obtain a certificate for a node name no Node has yet, never for one that exists (docs/pki.md)",
		c.Spec.CloudProvider, name)}}
	if shared != "" {
		out = append(out, ValidationFailure{Kind: "KubeletCredentials", Name: name, Message: shared + ": a node can read " +
			model.RoleConfigPath(name, model.RoleControlPlane) + ", which holds every control-plane key (the kubelet CA's among them); " +
			"give the control plane an identity of its own and the nodes read access to their own configurations only (docs/pki.md)"})
	}
	return out
}
