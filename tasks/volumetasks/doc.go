// Package volumetasks holds the provider-neutral volume task, Attach: a cloud volume claimed for this node and
// attached to it, whatever the cloud (the local provider's pool of disk images, EBS, GCE persistent disks). Each
// provider implements Provider in its own package; the world of a graph implements World to hand its provider to
// the tasks.
//
// Attach is the lock: whoever the provider says holds a volume's attachment (or claim) holds it, and no other
// node gets it until it is released, or until the lease of a provider with leases (Renewer) expired. An Attach
// of a volume another node holds fails with a terminal error that matches ErrHeld and names that node.
//
// The device the volume is attached as is Attach's output (AttachedDevice): a FormatAndMount of nodetasks takes
// the Attach task as its Attachment and reads the device from it when it runs. This package knows nothing of
// nodetasks; the two meet through that one method.
//
// It imports engine and the standard library only: no cloud SDK, nothing from tasks/nodetasks, cloudup, model,
// nodeup or protokube.
package volumetasks
