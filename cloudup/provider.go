package cloudup

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
)

// A Provider is what the operator's side does that depends on the cluster's cloud: one value per cloud,
// registered under its spec.cloudProvider value by RegisterProvider, from the init of the provider's package
// (providers/<cloud>; local's is built in, provider_local.go). A binary has the providers its main imports.
// Update, Delete, RollingUpdate, CheckZones, ValidateCluster and WriteCloudGraph ask the registry for the
// cluster's cloud; none of them switches on the cloud's name.
type Provider interface {
	// Update runs `update cluster` on the complete spec c, igs (stored, as read): the cloud graph on the cloud's
	// world, then what an apply deletes outside the graph. A provider runs both with RunUpdate.
	Update(ctx context.Context, cs *Clusters, stored *Stored, c *model.Cluster, igs []*model.InstanceGroup, o UpdateOptions) (*engine.Plan, error)
	// WriteGraph writes the cloud graph of the complete spec c, igs in DOT (`kubeup graph`).
	WriteGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error
	// DeleteOwned lists what cluster c owns in the cloud (the keys Delete reports; with o.Apply unset, marked
	// where the delete would be refused) and returns the cleanup that deletes it and returns the keys deleted.
	// A cloud whose resources carry the cluster's tags does both with Clusters.DeleteOwned.
	DeleteOwned(ctx context.Context, cs *Clusters, c *model.Cluster, o DeleteOptions) ([]string, func() ([]string, error), error)
	// OpenRolling returns the rolling-update side of the cluster's cloud; igs are all the cluster's groups. When
	// it is a Health too, `rolling-update --cloudonly` takes its checks from it.
	OpenRolling(ctx context.Context, cs *Clusters, c *model.Cluster, igs []*model.InstanceGroup) (RollingCloud, error)
	// Zones returns where the spec's zones must be ("region us-east-1") and the zones the cloud has there; ""
	// when the provider does not check them.
	Zones(ctx context.Context, s *model.ClusterSpec) (where string, have []string, err error)
	// ZonesNear is how a zone's problem lists the cloud's zones (have) for the spec's zone z.
	ZonesNear(z string, have []string) string
	// CredentialWarnings are the validation warnings about how the cluster's kubelets and machines prove who
	// they are (SharedTokenWarnings for a cloud whose kubelets bootstrap with the shared token).
	CredentialWarnings(c *model.Cluster) []ValidationFailure
}

// providers are the clouds this kubeup has, by spec.cloudProvider: those RegisterProvider was given.
var providers = map[string]Provider{}

// RegisterProvider makes p the provider of the clusters whose spec.cloudProvider is name. A provider's package
// calls it from its init; registering a name twice is a programmer's error, and panics.
func RegisterProvider(name string, p Provider) {
	if name == "" || p == nil {
		panic("cloudup.RegisterProvider: a provider needs a name and a value")
	}
	if _, dup := providers[name]; dup {
		panic("cloudup.RegisterProvider: provider " + name + " is registered twice")
	}
	providers[name] = p
}

// providerFor returns the provider of c's cloud, or an error that names the cluster, spec.cloudProvider's value
// and the clouds this kubeup has.
func providerFor(c *model.Cluster) (Provider, error) {
	if p := providers[c.Spec.CloudProvider]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("cluster %s: %w", c.Metadata.Name, unknownProvider(c.Spec.CloudProvider))
}

// unknownProvider is the error of a spec.cloudProvider this kubeup has no provider for.
func unknownProvider(name string) error {
	return fmt.Errorf("spec.cloudProvider %s is not a cloud this kubeup has (it has %s)", model.Echo(name),
		strings.Join(slices.Sorted(maps.Keys(providers)), ", "))
}

// WriteCloudGraph writes the cloud graph of the complete spec c, igs in DOT (kubeup graph).
func WriteCloudGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error {
	p, err := providerFor(c)
	if err != nil {
		return err
	}
	return p.WriteGraph(w, c, igs)
}
