// Package localtasks holds the tasks and the world of the local cloud provider: one machine, for development, CI
// and bare metal, with no cloud account.
//
// Cloud is the world of the local cloud graph. Its Pool keeps volumes as sparse disk images in a directory, each
// with a JSON sidecar of its zone, size, type and tags; its ZoneFile keeps the cluster's DNS records in an RFC 1035
// zone file that a DNS server can serve, and is the dnstasks.Provider of the graph's dnstasks.Record tasks. The
// Volume task (key type "LocalVolume") converges a volume; one that someone else (another `kubeup update cluster
// --yes`) created, changed or deleted since the task's Find is left alone, with a terminal error that matches
// ErrConflict. DeleteOwned is the cleanup of `kubeup delete cluster`:
// it finds what a cluster owns by its tags and its DNS names.
//
// Pool and ZoneFile serialise their writers within the process and with a flock on their directory, so that
// concurrent tasks and concurrent kubeup (or protokube) processes are safe; every file is replaced atomically. The
// holder of a lock records itself (pid, host, command, since when) in the directory's ".kubeup-lock" while it
// holds the lock, and a writer that waits says every few seconds, in a warning, whom it waits for. The holder also
// removes the temporary files ".NAME.tmp-DIGITS" that a killed writer left.
//
// Volumes is protokube's volumetasks.Provider on this cloud: an exclusive claim per volume (<pool>/NAME.claim,
// taken over only after its release or the expiry of its lease), attached as a loop device over the volume's
// image, or, for a volume whose sidecar names a block device (bare metal), as that device itself. The DNS
// providers of protokube are ZoneFile, HostsFile (a managed block of a hosts file) and RFC2136 (dynamic updates
// signed with TSIG).
//
// It imports engine, dnstasks, storetasks, internal/mountinfo, miekg/dns and the standard library. It must not
// import cloudup, model, nodeup, protokube or cmd, nor any cloud SDK.
package localtasks
