// Package nodegraph builds the node's task graph from a node configuration (model.NodeConfig): the assets, the
// container runtime, kubelet's and protokube's units, the static pods of the control plane and the files of the
// node's role (BuildNodeGraph, AddNodeTasks); the etcd member's static pod protokube writes (EtcdPod); and the
// Kubernetes objects protokube keeps for kubelets' credentials (AddKubeObjects).
//
// nodeup and protokube run these graphs; kubeup only draws them (kubeup graph). nodegraph imports model,
// engine and the node's task packages (tasks/nodetasks, tasks/kubetasks, tasks/pkitasks). It must not import a
// cloud's tasks or SDK, cloudup, nodeup, protokube or cmd.
package nodegraph
