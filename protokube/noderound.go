package protokube

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// A worker runs protokube when no cloud routes the Nodes' pod ranges (model.NodeRunsProtokube: the local provider,
// kubenet): its round, the node round, keeps only this node's routes to the other Nodes' ranges. It has no volume,
// no etcd, no DNS and no kube object to keep, and reads the Nodes as the node's kubelet does, with kubelet's own
// credentials (the Node authorizer lets a node list the Nodes, docs/pki.md): a worker holds no other.

// errNoKubeletCredentials is matched by the error of kubeletClient while kubelet has no client certificate yet
// (before its TLS bootstrap): the node round then waits, and changes nothing.
var errNoKubeletCredentials = errors.New("kubelet has no credentials yet")

// nodeRound runs the round of a worker's configuration: this node's routes to the other Nodes' pod ranges,
// read with kubelet's credentials, in the network namespace protokube runs in (the node's, when its root is "/").
func (o *Options) nodeRound(ctx context.Context, nc *model.NodeConfig, start time.Time) error {
	if err := o.identify(ctx, &model.ProtokubeConfig{CloudProvider: nc.Cluster.Spec.CloudProvider}); err != nil {
		return err
	}
	table := o.routeTable
	if table == nil {
		if o.Root != "/" {
			o.Logger.Info("node round: the node's root is not /: its network namespace is not this process's, its routes are left as they are", "root", o.Root)
			return nil
		}
		t, err := nodetasks.NewNetlinkRoutes("")
		if err != nil {
			return err
		}
		defer t.Close()
		table = t
	}
	kube, name, err := kubeletClient(o.Root, nc)
	if errors.Is(err, errNoKubeletCredentials) {
		o.Logger.Info("node round: waiting for kubelet's credentials (its TLS bootstrap): the routes to the Nodes' pod ranges are left as they are", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	r := &Round{routes: table, kube: kube}
	g := engine.NewGraph[*Round]()
	// This node is skipped by its address and by its Node's name (its certificate's): an address guessed wrong
	// (kubelet's --node-ip is not the default route's) must not route this node's own range to itself.
	addPodRoutes(ctx, g, r, nc, self{IP: o.Node.InternalIP, Name: name}, nil, o.Logger)
	if err := checkOwned(o.Conf, g, nil); err != nil {
		return err
	}
	target := engine.Apply
	if o.DryRun {
		target = engine.DryRun
	}
	res, runErr := engine.Run(ctx, g, r, engine.Options{Target: target, Logger: o.Logger})
	changes := 0
	if res != nil && res.Plan != nil {
		changes = len(res.Plan.Changes)
		if o.DryRun {
			if err := res.Plan.WriteTextApplying(o.Out, "Run protokube without --dryrun to apply these changes (it does, every round)"); err != nil {
				return err
			}
		}
	}
	o.Logger.Info("node round", "changes", changes, "dryRun", o.DryRun, "duration", time.Since(start).Round(time.Millisecond), "err", runErr)
	return runErr
}

// kubeconfigFile is what the node round reads of kubelet's kubeconfig: its current context's server, CA and
// client certificate and key, each inline (*-data) or a file (relative to the kubeconfig's directory).
type kubeconfigFile struct {
	CurrentContext string `json:"current-context"`
	Contexts       []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server string `json:"server"`
			CA     string `json:"certificate-authority"`
			CAData []byte `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Cert     string `json:"client-certificate"`
			CertData []byte `json:"client-certificate-data"`
			Key      string `json:"client-key"`
			KeyData  []byte `json:"client-key-data"`
		} `json:"user"`
	} `json:"users"`
}

// kubeletClient returns a client of the cluster's API with this node's kubelet's credentials: the kubeconfig kubelet
// writes after its TLS bootstrap (spec.kubelet.kubeconfig), its server, its CA and its client certificate and key
// (kubelet-client-current.pem). No other credential: a worker holds none. nodeName is the Node the certificate is
// of (its subject, system:node:<name>), "" if it is not a node's. While the kubeconfig or the files it names are
// not there, the error matches errNoKubeletCredentials.
func kubeletClient(root string, nc *model.NodeConfig) (client *kubetasks.Client, nodeName string, err error) {
	k := nc.Cluster.Spec.Kubelet
	if k == nil || k.Kubeconfig == "" {
		return nil, "", fmt.Errorf("the node configuration names no kubelet kubeconfig (spec.kubelet.kubeconfig)")
	}
	read := func(p string) ([]byte, error) {
		if !path.IsAbs(p) {
			p = path.Join(path.Dir(k.Kubeconfig), p)
		}
		b, err := os.ReadFile(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", p, errNoKubeletCredentials)
		}
		return b, err
	}
	b, err := read(k.Kubeconfig)
	if err != nil {
		return nil, "", err
	}
	var kc kubeconfigFile
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return nil, "", fmt.Errorf("kubelet's kubeconfig %s: %w", k.Kubeconfig, err)
	}
	bad := func(what string) error {
		return fmt.Errorf("kubelet's kubeconfig %s: %s (kubelet writes it after its TLS bootstrap: remove it, and kubelet bootstraps again)", k.Kubeconfig, what)
	}
	var clusterName, userName string
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}
	if clusterName == "" {
		return nil, "", bad(fmt.Sprintf("no context %q (its current-context) naming a cluster", kc.CurrentContext))
	}
	pick := func(data []byte, file, field string) ([]byte, error) {
		switch {
		case len(data) > 0:
			return data, nil
		case file != "":
			return read(file)
		}
		return nil, bad("no " + field)
	}
	var server string
	var ca, cert, key []byte
	found := false
	for _, c := range kc.Clusters {
		if c.Name == clusterName {
			found = true
			server = c.Cluster.Server
			if ca, err = pick(c.Cluster.CAData, c.Cluster.CA, "certificate-authority"); err != nil {
				return nil, "", err
			}
		}
	}
	if !found || server == "" {
		return nil, "", bad(fmt.Sprintf("no cluster %q with a server", clusterName))
	}
	found = false
	for _, u := range kc.Users {
		if u.Name == userName {
			found = true
			if cert, err = pick(u.User.CertData, u.User.Cert, "client-certificate"); err != nil {
				return nil, "", err
			}
			if key, err = pick(u.User.KeyData, u.User.Key, "client-key"); err != nil {
				return nil, "", err
			}
		}
	}
	if !found {
		return nil, "", bad(fmt.Sprintf("no user %q", userName))
	}
	if client, err = kubetasks.NewClient(server, nodegraph.FieldManager, ca, cert, key); err != nil {
		return nil, "", fmt.Errorf("kubelet's kubeconfig %s: %w", k.Kubeconfig, err)
	}
	if b, _ := pem.Decode(cert); b != nil {
		if crt, err := x509.ParseCertificate(b.Bytes); err == nil {
			nodeName, _ = strings.CutPrefix(crt.Subject.CommonName, kubetasks.NodeUserPrefix)
			if nodeName == crt.Subject.CommonName {
				nodeName = ""
			}
		}
	}
	return client, nodeName, nil
}
