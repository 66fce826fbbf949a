package protokube

import (
	"fmt"
	"os"
	"path/filepath"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/kubetasks"
)

// kubeClients returns this node's clients of its own kube-apiserver: as protokube (which applies kubeup's
// objects: model.ProtokubeUser) and as the CSR approver (model.CSRApproverUser), each with its client
// certificate from the node's files, trusting the Kubernetes CA.
func kubeClients(root string, nc *model.NodeConfig) (objects, approver *kubetasks.Client, err error) {
	s := &nc.Cluster.Spec
	if s.Kubelet == nil || s.KubeAPIServer == nil {
		return nil, nil, fmt.Errorf("the node configuration names no kubelet or kube-apiserver")
	}
	read := func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, p)) }
	ca, err := read(s.Kubelet.ClientCAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the Kubernetes CA: %w", err)
	}
	server := localAPI(s.KubeAPIServer)
	client := func(certFile, keyFile string) (*kubetasks.Client, error) {
		cert, err := read(certFile)
		if err != nil {
			return nil, err
		}
		key, err := read(keyFile)
		if err != nil {
			return nil, err
		}
		return kubetasks.NewClient(server, nodegraph.FieldManager, ca, cert, key)
	}
	if objects, err = client(model.ProtokubeCertFile, model.ProtokubeKeyFile); err != nil {
		return nil, nil, fmt.Errorf("protokube's client certificate: %w", err)
	}
	if approver, err = client(model.CSRApproverCertFile, model.CSRApproverKeyFile); err != nil {
		return nil, nil, fmt.Errorf("the CSR approver's client certificate: %w", err)
	}
	return objects, approver, nil
}

// KubeAPI is this node's kube-apiserver as protokube: kubeup's objects are applied through it.
func (r *Round) KubeAPI() *kubetasks.Client { return r.kube }

// ApproverAPI is this node's kube-apiserver as the CSR approver.
func (r *Round) ApproverAPI() *kubetasks.Client { return r.approver }

var _ nodegraph.KubeWorld = (*Round)(nil)
