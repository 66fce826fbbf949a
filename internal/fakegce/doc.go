// Package fakegce is an in-memory Google Compute Engine and Cloud DNS that speak Google's JSON REST on one address,
// for tests and demos, and the GCE metadata server of a chosen fake instance. google.golang.org/api's compute/v1
// and dns/v1 reach it with option.WithEndpoint(ADDRESS+"compute/v1/") and option.WithEndpoint(ADDRESS+"dns/v1/")
// plus option.WithoutAuthentication; Google's Node.js clients (@google-cloud/compute over REST, @google-cloud/dns)
// are its referee (nodejs_test.go).
//
// Paths: /compute/v1/projects/{project}/... (zones/{z}/..., regions/{r}/..., global/..., aggregated/...),
// /dns/v1/projects/{project}/managedZones/..., IAM's /v1/projects/{project}/serviceAccounts/{email} (iam/v1 reaches
// it with option.WithEndpoint(ADDRESS); see iam.go), /computeMetadata/v1/... (header Metadata-Flavor: Google), and the
// control endpoints /__fake/... (fakecontrol.Control): GET /__fake/calls ({"compute.disks.insert": 1, ...}, and
// under "__throttled" how many were answered 429 when any were), POST /__fake/reset-calls, POST /__fake/faults (a
// JSON Faults), POST /__fake/metadata-instance?name= (the instance the main address's metadata server answers
// for).
//
// It is laid out like fakeaws: one in-memory state behind one lock (Server.mu), call counting and fault injection
// as a wrapper around the handlers (server.go, faults.go; what the fakes share of it is internal/fakecontrol's),
// one file per part of the API. Resources are the
// google.golang.org/api types themselves (compute.Disk, dns.ManagedZone, ...), so that the JSON is the API's.
//
// Semantics others rely on:
//   - Every project exists (made on first use); any zone named like a GCE zone (us-central1-a) exists, its region
//     being the name without the last "-x".
//   - selfLinks are https://www.googleapis.com/compute/v1/projects/{p}/zones/{z}/disks/{name} (as GCE writes
//     them); references in requests may be full URLs (any host), "projects/p/...", "zones/z/..." / "global/..." /
//     "regions/r/..." or, where GCE allows it, a bare name.
//   - ids are decimal uint64s, unique in the server.
//   - Mutations answer an Operation (zonal, regional or global, like the resource) whose effect is already done
//     when it is answered; it is PENDING in that answer, RUNNING at its first operations.get, DONE at the next
//     (Faults.SlowOperations more RUNNING polls first); operations.wait answers DONE unless slowed, when it
//     answers RUNNING (a wait that timed out) and counts as a poll. Every refusal is the call's own error answer
//     (no operation ends with an error today).
//   - requestId: a mutating call whose requestId the project has seen answers that call's operation again and does
//     nothing else (GCE's idempotency).
//   - list filters: terms "field = value", "field != value", "field eq regexp", "field ne regexp", "field:*"
//     (present), joined by AND or written as "(a = b) (c = d)"; fields are the resource's JSON paths
//     (name, status, labels.KEY, zone); values may be quoted and use * as a wildcard with = and !=. maxResults
//     (at most 500, the default) and pageToken page in name order.
//   - Instances of an instance group manager are named <baseInstanceName>-<4 lowercase letters or digits>, take
//     the next free address of the template's subnetwork's range (from .2), an external address from 203.0.113.0/24
//     when the template asks for an access config, and the template's labels, tags, metadata (startup-script
//     included), plus the metadata items instance-template and created-by as GCE adds them. No boot disk resource
//     is made for them. Their canIpForward is the template's.
//   - Routes (routes.go) are immutable; a route to an instance carries GCE's warnings when the instance is gone or
//     does not forward (canIpForward off); a network with routes cannot be deleted.
package fakegce
