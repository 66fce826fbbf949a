// Package atomicfile replaces files so that a reader, or a crash, sees the old contents or the new, never a
// mix, and cleans up after writers that were killed: the one implementation of the state store's, the local
// provider's, the kubeconfig's and nodeup's machine records' writes.
//
// A writer's temporary file is named .<base>.tmp-<digits>, beside the file it replaces, and holds an exclusive
// flock from its creation to its rename, so that a temporary file that can be flocked without waiting belongs
// to no live writer. It imports nothing of kubeup.
package atomicfile
