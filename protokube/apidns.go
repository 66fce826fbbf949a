package protokube

import (
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// addAPIRecords adds this node's part of the API's names (the internal name, then the public one) to g: its
// own address, published while it holds a member volume and its own kube-apiserver is ready (api is nil: the
// round's apiReady), withdrawn otherwise. A node checks only its own kube-apiserver, so each node writes only its
// own address; and, as every node alike, it removes from the names the addresses of nodes that hold no member
// volume any more (the claims say who does, in every zone: a dead node's once its claim ended), and the
// placeholder once a real address is there. When no address is left, the name holds the placeholder
// (model.DNSPlaceholderIPv4) rather than vanish, as before the first kube-apiserver was ready: a resolver would
// cache the name's absence.
//
// The public name carries the external address of each node (its internal one when it has none); when both
// names are one, it carries the internal addresses, which every node reaches.
func addAPIRecords(g *engine.Graph[*Round], pc *model.ProtokubeConfig, me volumetasks.Holder, ch *choice, api error) {
	present := api == nil && len(ch.mine) > 0
	internal, external := ch.apiAddresses(me)
	published := map[string]bool{}
	for i, name := range pc.DNSNames { // the internal name, then the public one
		value, keep := me.InternalIP, internal
		if i > 0 {
			value, keep = me.ExternalIP, external
			if value == "" {
				value = me.InternalIP
			}
		}
		if name == "" || value == "" || published[name] {
			continue
		}
		published[name] = true
		engine.Add(g, &dnstasks.Shared[*Round]{Name: name, Type: "A", Value: value, Present: present,
			TTL: ptr(apiTTL), Keep: keep, Fallback: model.DNSPlaceholderIPv4})
	}
}
