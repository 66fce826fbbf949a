package model

import "strings"

// keystoreFile is a field of the spec that names where a node keeps one of the keystore's files, and which file:
// what a keypair gives (its certificate, its key, its public key, a kubeconfig holding it).
type keystoreFile struct {
	field, path, holds string
	// kubeconfig: the field is a component's kubeconfig, whose path validateComponents checks (it is required)
	kubeconfig bool
}

// keystoreFiles are the spec's fields that name the keystore's files on a node (the complete spec's: unset
// fields are left out).
func keystoreFiles(s *ClusterSpec) []keystoreFile {
	var out []keystoreFile
	add := func(field, path, holds string) {
		if path != "" {
			out = append(out, keystoreFile{field: field, path: path, holds: holds, kubeconfig: strings.HasPrefix(holds, "the kubeconfig")})
		}
	}
	if k := s.Kubelet; k != nil {
		add("spec.kubelet.clientCAFile", k.ClientCAFile, "the certificate of "+KeypairKubernetesCA)
		add("spec.kubelet.bootstrapKubeconfig", k.BootstrapKubeconfig, "the bootstrap kubeconfig of "+KeypairBootstrapToken)
	}
	if a := s.KubeAPIServer; a != nil {
		const p = "spec.kubeAPIServer."
		add(p+"clientCAFile", a.ClientCAFile, "the certificates of "+KeypairKubernetesCA+" and "+KeypairKubeletCA)
		add(p+"kubeletCertificateAuthority", a.KubeletCertificateAuthority, "the certificate of "+KeypairKubeletCA)
		add(p+"tlsCertFile", a.TLSCertFile, "the certificate of "+KeypairKubeAPIServer)
		add(p+"tlsPrivateKeyFile", a.TLSPrivateKeyFile, "the key of "+KeypairKubeAPIServer)
		add(p+"kubeletClientCertificate", a.KubeletClientCertificate, "the certificate of "+KeypairKubeletAPIClient)
		add(p+"kubeletClientKey", a.KubeletClientKey, "the key of "+KeypairKubeletAPIClient)
		add(p+"etcdCAFile", a.EtcdCAFile, "the certificate of "+KeypairEtcdClientsCA)
		add(p+"etcdCertFile", a.EtcdCertFile, "the certificate of "+KeypairEtcdAPIClient)
		add(p+"etcdKeyFile", a.EtcdKeyFile, "the key of "+KeypairEtcdAPIClient)
		add(p+"requestheaderClientCAFile", a.RequestheaderClientCAFile, "the certificate of "+KeypairFrontProxyCA)
		add(p+"proxyClientCertFile", a.ProxyClientCertFile, "the certificate of "+KeypairFrontProxyClient)
		add(p+"proxyClientKeyFile", a.ProxyClientKeyFile, "the key of "+KeypairFrontProxyClient)
		add(p+"serviceAccountKeyFile", a.ServiceAccountKeyFile, "the public key of "+KeypairServiceAccount)
		add(p+"serviceAccountSigningKeyFile", a.ServiceAccountSigningKeyFile, "the key of "+KeypairServiceAccount)
	}
	if m := s.KubeControllerManager; m != nil {
		const p = "spec.kubeControllerManager."
		add(p+"serviceAccountPrivateKeyFile", m.ServiceAccountPrivateKeyFile, "the key of "+KeypairServiceAccount)
		add(p+"rootCAFile", m.RootCAFile, "the certificate of "+KeypairKubernetesCA)
		add(p+"clusterSigningKubeletClientCertFile", m.ClusterSigningKubeletClientCertFile, "the certificate of "+KeypairKubeletCA)
		add(p+"clusterSigningKubeletClientKeyFile", m.ClusterSigningKubeletClientKeyFile, "the key of "+KeypairKubeletCA)
		add(p+"clusterSigningKubeletServingCertFile", m.ClusterSigningKubeletServingCertFile, "the certificate of "+KeypairKubeletCA)
		add(p+"clusterSigningKubeletServingKeyFile", m.ClusterSigningKubeletServingKeyFile, "the key of "+KeypairKubeletCA)
		add(p+"kubeconfig", m.Kubeconfig, "the kubeconfig of "+KeypairKubeControllerManager)
	}
	if sc := s.KubeScheduler; sc != nil {
		add("spec.kubeScheduler.kubeconfig", sc.Kubeconfig, "the kubeconfig of "+KeypairKubeScheduler)
	}
	if kp := s.KubeProxy; kp != nil {
		add("spec.kubeProxy.kubeconfig", kp.Kubeconfig, "the kubeconfig of "+KeypairKubeProxy)
	}
	return out
}

// validateKeystoreFiles checks the fields that name the keystore's files on a node: each an absolute, clean
// path in a directory kubeup owns there (nodeup writes keys there), not in the static pods' directory, and two
// fields name one file only when they mean the same contents.
func validateKeystoreFiles(ps *problems, s *ClusterSpec) {
	first := map[string]keystoreFile{} // the first field that names each path
	for _, f := range keystoreFiles(s) {
		if !f.kubeconfig {
			validateNodePath(ps, f.field, f.path, false)
		}
		if k := s.Kubelet; k != nil && k.PodManifestPath != "" && under(f.path, k.PodManifestPath) {
			ps.add(f.field, "%q is in spec.kubelet.podManifestPath %s, where kubelet reads every file as a static pod: give it a path outside it", f.path, k.PodManifestPath)
		}
		g, named := first[f.path]
		switch {
		case !named:
			first[f.path] = f
		case g.holds != f.holds:
			ps.add(f.field, "%q is also %s, which holds %s; this field's file holds %s: give it a path of its own", f.path, g.field, g.holds, f.holds)
		}
	}
}
