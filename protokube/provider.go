package protokube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// A nodeProvider is what protokube needs of one cloud: who this node is there, and the cloud's volumes and DNS.
// One value per cloud, in nodeProviders under its spec.cloudProvider value; identify and cloudProviders ask it,
// never switch on the cloud's name.
type nodeProvider struct {
	// openInstance reads this instance's identity from the cloud (IMDS, the metadata server); nil where the
	// host's name and the address of its default route are the node's identity.
	openInstance func(ctx context.Context) (instanceCloud, error)
	// providers returns the volumes and DNS of the configuration's cloud for node me.
	providers func(o *Options, nc *model.NodeConfig, root string, me volumetasks.Holder, lease time.Duration) (volumetasks.Provider, dnstasks.Provider, error)
}

// nodeProviders are the clouds this protokube has, by spec.cloudProvider.
var nodeProviders = map[string]nodeProvider{
	model.CloudAWS: {
		openInstance: func(ctx context.Context) (instanceCloud, error) { return newAWSCloud(ctx) },
		providers:    instanceProviders,
	},
	model.CloudGCE: {
		openInstance: func(ctx context.Context) (instanceCloud, error) { return newGCECloud(ctx) },
		providers:    instanceProviders,
	},
	model.CloudLocal: {providers: localProviders},
}

// instanceProviders are the volumes and DNS of a cloud whose instance protokube identified (identify).
func instanceProviders(o *Options, nc *model.NodeConfig, root string, me volumetasks.Holder, _ time.Duration) (volumetasks.Provider, dnstasks.Provider, error) {
	pc := nc.Protokube
	if o.cloud == nil {
		return nil, nil, fmt.Errorf("protokube: cloudProvider %s: this instance's identity was not read", pc.CloudProvider)
	}
	return o.cloud.providers(pc, root, me)
}

// localProviders are the local cloud's: the pool's volumes, claimed with a lease, and the hosts file, zone file
// or DNS server of the configuration.
func localProviders(o *Options, nc *model.NodeConfig, root string, me volumetasks.Holder, lease time.Duration) (volumetasks.Provider, dnstasks.Provider, error) {
	pc := nc.Protokube
	if pc.Local == nil || pc.Local.PoolDir == "" {
		return nil, nil, errors.New("protokube: the configuration names no local pool (spec.local.poolDir)")
	}
	pool, err := localtasks.NewPool(pc.Local.PoolDir)
	if err != nil {
		return nil, nil, err
	}
	if !o.DryRun { // a dry run changes nothing: it may run beside the node's protokube
		if err := o.lockNode(pool, pc.Local.PoolDir, me.NodeID); err != nil {
			return nil, nil, err
		}
	}
	dns, err := localDNS(pc, root)
	if err != nil {
		return nil, nil, err
	}
	return localtasks.NewVolumes(pool, me, lease), dns, nil
}
