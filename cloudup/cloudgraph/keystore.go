package cloudgraph

import (
	"fmt"
	"kubeup.dev/kubeup/model"
	"maps"
	"slices"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/pkitasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// keystore is the keypair tasks of one cloud graph, by name.
type keystore[C storetasks.World] map[string]*pkitasks.Keypair[C]

// addKeystore adds every keypair of a complete spec to g.
func addKeystore[C storetasks.World](g *engine.Graph[C], c *model.Cluster) (keystore[C], error) {
	name, s := c.Metadata.Name, &c.Spec
	dir := model.KeystoreDir(name)
	ks := keystore[C]{}
	add := func(k *pkitasks.Keypair[C]) *pkitasks.Keypair[C] {
		k.Dir, k.Status = dir, pkitasks.Valid
		slices.Sort(k.DNSNames)
		slices.Sort(k.IPAddresses)
		if k.Usage == pkitasks.UsageCA {
			k.Lifetime = model.CALifetime
		} else if k.Usage != pkitasks.UsageKey && k.Usage != pkitasks.UsageToken {
			k.Lifetime = model.CertLifetime
		}
		k = engine.Add(g, k)
		ks[k.Name] = k
		return k
	}
	ca := func(n string) *pkitasks.Keypair[C] {
		return add(&pkitasks.Keypair[C]{Name: n, CommonName: n, Usage: pkitasks.UsageCA})
	}
	kubeCA, peersCA, clientsCA, proxyCA := ca(model.KeypairKubernetesCA), ca(model.KeypairEtcdPeersCA), ca(model.KeypairEtcdClientsCA), ca(model.KeypairFrontProxyCA)
	add(&pkitasks.Keypair[C]{Name: model.KeypairServiceAccount, Usage: pkitasks.UsageKey})
	ca(model.KeypairKubeletCA)
	add(&pkitasks.Keypair[C]{Name: model.KeypairBootstrapToken, Usage: pkitasks.UsageToken})

	serviceIP, ok := model.NthAddress(s.Networking.ServiceClusterIPRange, 1)
	if !ok {
		return nil, fmt.Errorf("cluster %s: spec.networking.serviceClusterIPRange %q has no first address", name, s.Networking.ServiceClusterIPRange)
	}
	domain := s.Networking.ClusterDomain
	add(&pkitasks.Keypair[C]{
		Name: model.KeypairKubeAPIServer, CommonName: model.KeypairKubeAPIServer, Usage: pkitasks.UsageServer, Signer: kubeCA,
		DNSNames: []string{
			s.API.PublicName, s.API.InternalName,
			"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + domain,
			"localhost",
		},
		IPAddresses: []string{serviceIP, "127.0.0.1"},
	})
	client := func(n, cn string, signer *pkitasks.Keypair[C], org ...string) {
		add(&pkitasks.Keypair[C]{Name: n, CommonName: cn, Organization: org, Usage: pkitasks.UsageClient, Signer: signer})
	}
	client(model.KeypairKubeletAPIClient, model.KeypairKubeletAPIClient, kubeCA, model.AdminGroup)
	client(model.KeypairEtcdAPIClient, "kube-apiserver", clientsCA)
	client(model.KeypairFrontProxyClient, model.KeypairFrontProxyClient, proxyCA)
	client(model.KeypairKubeControllerManager, "system:kube-controller-manager", kubeCA)
	client(model.KeypairKubeScheduler, "system:kube-scheduler", kubeCA)
	client(model.KeypairKubeProxy, "system:kube-proxy", kubeCA)
	client(model.KeypairAdmin, model.AdminUser, kubeCA, model.AdminGroup)
	client(model.KeypairProtokube, model.ProtokubeUser, kubeCA, model.AdminGroup)
	client(model.KeypairCSRApprover, model.CSRApproverUser, kubeCA)

	for _, e := range s.EtcdClusters {
		for _, m := range e.Members {
			dns := model.EtcdMemberDNSName(name, e.Name, m.Name)
			add(&pkitasks.Keypair[C]{
				Name: model.EtcdPeerKeypair(e.Name, m.Name), CommonName: dns, Usage: pkitasks.UsagePeer, Signer: peersCA,
				DNSNames: []string{dns},
			})
			// Server and client usages both, as kubeadm has it: etcd's gRPC gateway (its HTTP/JSON API) dials the
			// member's own client port presenting this certificate, which client-cert-auth then checks.
			add(&pkitasks.Keypair[C]{
				Name: model.EtcdServerKeypair(e.Name, m.Name), CommonName: dns, Usage: pkitasks.UsagePeer, Signer: clientsCA,
				DNSNames: []string{dns, "localhost"}, IPAddresses: []string{"127.0.0.1"},
			})
		}
	}
	return ks, nil
}

// tasks returns the keypairs, sorted by name: what a task that reads their outputs runs after.
func (ks keystore[C]) tasks() []engine.Task {
	out := make([]engine.Task, 0, len(ks))
	for _, n := range slices.Sorted(maps.Keys(ks)) {
		out = append(out, ks[n])
	}
	return out
}

// issued returns what the keystore holds now: the outputs of its tasks (nil for a keypair that is still to be
// issued, in a dry run).
func (ks keystore[C]) issued() model.Issued {
	out := model.Issued{}
	for n, k := range ks {
		out[n] = issuedKeypair(k.Issued)
	}
	return out
}

// issuedKeypair is what the node configurations hold of is; nil for nil (a keypair still to be issued).
func issuedKeypair(is *pkitasks.Issued) *model.IssuedKeypair {
	if is == nil {
		return nil
	}
	pub := model.PendingPEM // a token has none
	if is.Key != nil {
		var err error
		if pub, err = is.PublicKeyPEM(); err != nil {
			pub = model.PendingPEM // a key that was read and parsed has a public half: unreachable
		}
	}
	return &model.IssuedKeypair{CertPEM: is.CertPEM, KeyPEM: is.KeyPEM, PublicKeyPEM: pub, Token: is.Token}
}
