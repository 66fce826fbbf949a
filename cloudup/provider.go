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

// A provider is what the operator's side does that depends on the cluster's cloud: one value per cloud, in
// providers under its spec.cloudProvider value (provider_local.go, provider_aws.go, provider_gce.go). Update,
// Delete, RollingUpdate, CheckZones, ValidateCluster and WriteCloudGraph ask providerFor; none of them switches
// on the cloud's name.
type provider interface {
	// update runs `update cluster` on the complete spec c, igs (stored, as read): the cloud graph on the cloud's
	// world, then what an apply deletes outside the graph.
	update(ctx context.Context, cs *Clusters, stored *Stored, c *model.Cluster, igs []*model.InstanceGroup, o UpdateOptions) (*engine.Plan, error)
	// writeGraph writes the cloud graph of the complete spec c, igs in DOT.
	writeGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error
	// deleteOwned lists what cluster c owns in the cloud (the keys Delete reports; with o.Apply unset, marked
	// where the delete would be refused) and returns the cleanup that deletes it and returns the keys deleted.
	deleteOwned(ctx context.Context, cs *Clusters, c *model.Cluster, o DeleteOptions) ([]string, func() ([]string, error), error)
	// openRolling returns the rolling-update side of the cluster's cloud; igs are all the cluster's groups.
	openRolling(ctx context.Context, cs *Clusters, c *model.Cluster, igs []*model.InstanceGroup) (rollingCloud, error)
	// zones returns where the spec's zones must be ("region us-east-1") and the zones the cloud has there; ""
	// when the provider does not check them.
	zones(ctx context.Context, s *model.ClusterSpec) (where string, have []string, err error)
	// zonesNear is how a zone's problem lists the cloud's zones (have) for the spec's zone z.
	zonesNear(z string, have []string) string
	// credentialWarnings are the validation warnings about how the cluster's kubelets and machines prove who
	// they are.
	credentialWarnings(c *model.Cluster) []ValidationFailure
}

// providers are the clouds this kubeup has, by spec.cloudProvider.
var providers = map[string]provider{
	model.CloudLocal: localProvider{},
	model.CloudAWS:   awsProvider{},
	model.CloudGCE:   gceProvider{},
}

// providerFor returns the provider of c's cloud, or an error that names the cluster, spec.cloudProvider's value
// and the clouds this kubeup has.
func providerFor(c *model.Cluster) (provider, error) {
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
	return p.writeGraph(w, c, igs)
}
