// Package sharedread holds the reads a cloud's tasks share within one run: Shared is one read (every volume the
// cluster owns, every firewall rule) that the first caller makes and every concurrent or later caller reads, until
// it is forgotten; Keyed is one Shared per key (the subnets of one network, one zone's disks). A cloud's world
// keeps them so that a graph of many tasks of one type costs one list call per run instead of one per task.
//
// It imports the standard library only: nothing of engine, the task packages or any cloud SDK.
package sharedread
