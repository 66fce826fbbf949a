package protokube

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/protokube/nodecloud"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// A nodeProvider is what protokube needs of one cloud: who this node is there, and the cloud's volumes and DNS.
// The local provider is protokube's own (localProviders); every other cloud is registered with
// protokube/nodecloud by its package (providers/aws/awsnode, providers/gce/gcenode), which a binary links by
// importing it (cmd/protokube-aws). nodeProviderOf asks them; nothing else switches on the cloud's name.
type nodeProvider struct {
	// openInstance reads this instance's identity from the cloud (IMDS, the metadata server); nil where the
	// host's name and the address of its default route are the node's identity.
	openInstance nodecloud.Open
	// providers returns the volumes and DNS of the configuration's cloud for node me.
	providers func(o *Options, nc *model.NodeConfig, root string, me volumetasks.Holder, lease time.Duration) (volumetasks.Provider, dnstasks.Provider, error)
}

// builtinProviders are protokube's own: the local cloud's, where the host is the node and the pool's volumes
// its disks.
var builtinProviders = map[string]nodeProvider{
	model.CloudLocal: {providers: localProviders},
}

// nodeProviderOf returns the provider of the cloud name: a built-in one, or a cloud this binary links.
func nodeProviderOf(name string) (nodeProvider, bool) {
	if p, ok := builtinProviders[name]; ok {
		return p, true
	}
	open, ok := nodecloud.Lookup(name)
	if !ok {
		return nodeProvider{}, false
	}
	return nodeProvider{openInstance: open, providers: instanceProviders}, true
}

// nodeProviderNames are the clouds this protokube has, for messages: "aws, local".
func nodeProviderNames() string {
	return strings.Join(slices.Sorted(slices.Values(append(nodecloud.Names(), slices.Collect(maps.Keys(builtinProviders))...))), ", ")
}

// instanceProviders are the volumes and DNS of a cloud whose instance protokube identified (identify).
func instanceProviders(o *Options, nc *model.NodeConfig, root string, me volumetasks.Holder, _ time.Duration) (volumetasks.Provider, dnstasks.Provider, error) {
	pc := nc.Protokube
	if o.cloud == nil {
		return nil, nil, fmt.Errorf("protokube: cloudProvider %s: this instance's identity was not read", pc.CloudProvider)
	}
	return o.cloud.Providers(pc, root, me)
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
