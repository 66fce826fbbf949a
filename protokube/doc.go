// Package protokube keeps a control-plane node converged: the sync loop that re-runs the node graph, the claim
// of etcd volumes (at most one member volume per etcd cluster; attach is the lock), and the publication of DNS
// for what is actually mounted and running.
//
// protokube must not import cloudup or cmd.
package protokube
