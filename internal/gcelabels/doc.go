// Package gcelabels is the one encoding of kubeup's tags as GCE labels (EncodeTags, DecodeLabels) and of names as
// GCE resource names (ResourceName): used by the gce tasks (tasks/gcetasks), the gce cloud graph, protokube, and
// the model's validation, which refuses an etcd cluster whose disks' labels GCE would not take. It is a leaf: it
// imports no SDK and nothing of kubeup, so that model can use it and stay pure.
package gcelabels
