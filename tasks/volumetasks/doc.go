// Package volumetasks holds the provider-neutral volume tasks, Attach and Detach. Attach is a cloud volume
// claimed for this node and attached to it, whatever the cloud (the local provider's pool of disk images, EBS, GCE
// persistent disks); Detach is this node's attachment of a volume another node won in a race, which must go. Each
// provider implements Provider in its own package; the world of a graph implements World to hand its provider to
// the tasks.
//
// Attach is the lock: whoever the provider says holds a volume's attachment (or claim) holds it, and no other
// node gets it until it is released, or until the lease of a provider with leases (Renewer) expired. An Attach
// of a volume another node holds fails with a terminal error that matches ErrHeld and names that node.
//
// Where a cloud lets a volume have several attachments (Contested: EBS Multi-Attach, GCE multi-writer disks),
// two nodes can both attach a volume they both saw free. The provider ranks the attachments by a rule every node
// computes alike; the winner holds the volume but neither formats nor mounts it while another attachment exists
// (not ready); each loser's Detach task detaches its own attachment, only while nothing on its machine mounts its
// device or holds it open (DevicesInUse reads the mount table and tries an exclusive open).
//
// The device the volume is attached as is Attach's output (AttachedDevice): a FormatAndMount of nodetasks takes
// the Attach task as its Attachment and reads the device from it when it runs. This package knows nothing of
// nodetasks; the two meet through that one method.
//
// It imports engine, internal/mountinfo, golang.org/x/sys/unix and the standard library only: no cloud SDK,
// nothing from tasks/nodetasks, cloudup, model, nodeup or protokube.
package volumetasks
