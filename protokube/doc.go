// Package protokube keeps a control-plane node converged, in rounds (Run): each round reads the node
// configuration as nodeup does (nodeup.LoadConfig), lists the etcd member volumes of the node's zone, keeps the
// one of each etcd cluster the node holds or claims a free one (choose: at most one per etcd cluster; attach is
// the lock), and converges in one engine run over a world of parts (Round): the node's tasks with kubelet
// started, the attach, format-if-blank and mount of each volume, etcd's manifest while its volume is mounted
// (nodetasks.Absent otherwise), the DNS names of the members it serves, and its own address in the API's names
// while its own kube-apiserver answers /readyz (apiready.go, apidns.go).
//
// On the local provider a worker runs protokube too (model.NodeRunsProtokube): its node round (noderound.go)
// keeps only the node's routes to the other Nodes' pod ranges, read with kubelet's own credentials.
//
// On AWS (aws.go), the node is the EC2 instance IMDS names, and the providers are awstasks' Volumes (EBS, in the
// instance's zone) and Route53 (the configuration's DNS zone), made on the first round and kept.
//
// protokube imports engine, model, nodeup, the task packages, the AWS SDK's configuration and clients, and the
// standard library. It must not import cloudup or cmd.
package protokube
