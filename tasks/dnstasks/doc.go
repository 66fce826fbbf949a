// Package dnstasks holds the provider-neutral DNS task, Record: a record set (a name, a type, a TTL and its
// values) that any cloud's world can converge through the Provider interface it defines. Each provider (Route53,
// Cloud DNS, the local provider's zone file, RFC 2136 later) implements Provider in its own package; the world
// of a cloud graph implements World to hand its provider to the tasks. Withdrawn removes one value from a set
// (a node's address from an etcd member's name it no longer serves); Shared is one writer's value in a set that
// several writers keep together (each control-plane node's address in the API's names, while its kube-apiserver
// is ready).
//
// Names are fully qualified, lowercase and without the trailing dot ("api.demo.example.com"); values are in
// canonical form and sorted (see RecordSet). Validate and the Canonical functions are shared by the task and the
// providers, so that both agree on what a valid record is.
//
// It imports engine and the standard library only: no cloud SDK, no DNS library, nothing from cloudup, model,
// nodeup or protokube.
package dnstasks
