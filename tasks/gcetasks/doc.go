// Package gcetasks holds kubeup's GCE cloud: the world of a GCE cloud graph (Cloud: the compute and Cloud DNS
// services of one project and the batched reads every task's Find shares), its tasks (the network and
// subnetworks the user owns, checked and never changed; the firewall rules, persistent disks, instance templates
// and managed instance groups kubeup owns; kubenet's routes of the network, which protokube keeps: PlanPodRoutes),
// the Cloud DNS provider of dnstasks, the persistent-disk provider of
// volumetasks that protokube claims etcd disks with, the instance identity of the metadata server, and the
// cleanup of a cluster by its labels.
//
// GCE labels cannot hold kubeup's tag keys ("kubernetes.io/cluster/<name>", "k8s.io/etcd/main"): labels.go is
// the one encoding of tags as labels, which the model and protokube use through its functions.
//
// Every API error goes through Classify, so that the engine retries throttling and server errors and fails fast
// on invalid requests and missing permissions, with Google's reason and message. Mutations answer operations,
// which are waited on (waitOperation) within the task's context.
//
// It imports google.golang.org/api, the metadata client, engine and the other task packages; nothing from model,
// cloudup, nodeup or protokube.
package gcetasks
