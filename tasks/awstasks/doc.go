// Package awstasks holds kubeup's AWS cloud: the world of an AWS cloud graph (Cloud: the SDK clients and the
// batched reads every task's Find shares), its tasks (the VPC, subnets and instance profiles the user owns,
// checked and never changed; the security groups and rules, EBS volumes, launch templates and Auto Scaling groups
// kubeup owns; kubenet's routes in the VPC's route tables and its instances' source/destination check, which
// protokube keeps: PlanPodRoutes), the Route53 provider of dnstasks, the EBS provider of volumetasks that protokube claims etcd
// volumes with, and the cleanup of a cluster by its ownership tag.
//
// Every SDK error goes through Classify, so that the engine retries throttling and server errors and fails fast
// on validation and permission errors, with AWS's code and message.
//
// It imports the SDK, engine and the other task packages; nothing from model, cloudup, nodeup or protokube.
package awstasks
