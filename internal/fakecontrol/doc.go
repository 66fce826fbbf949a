// Package fakecontrol is what the in-memory clouds (internal/fakeaws, internal/fakegce) share around their APIs,
// written once: the count of calls by operation, the fault injection every API call goes through (a seeded share
// of throttled and of failed calls, latency, a cap on the calls in flight, and which calls it applies to), the
// control endpoints under /__fake/, and the loop of a fake's command.
//
// A fake keeps what is its cloud's: how a request names its operation and service, what its throttling and
// server error answers look like, which operations mutate (Mutating), its own faults (eventual consistency, slow
// operations, denied calls) and its own control endpoints (the instance IMDS or the metadata server answers for).
//
// The control endpoints (Control): GET /__fake/calls answers the per-operation counts as a JSON object
// ({"DescribeVolumes": 3, ...}), with the calls answered as throttled under "__throttled" when there were any
// (no operation's name starts with "__"); POST /__fake/reset-calls zeroes them; POST /__fake/faults sets the
// fault injection (the fake's JSON Faults, unknown fields refused); a fake's own endpoints are POSTs that name one
// thing in their query. Control requests are not counted.
//
// fakecontroltest runs a fake's command in its test (build, bad --faults, serve, SIGINT).
//
// It imports no fake, no SDK and nothing of kubeup's domain.
package fakecontrol
