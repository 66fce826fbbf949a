// Package containerd holds the end-to-end test (build tag e2e) of what `make runtime-binaries` and `make images`
// build: the containerd, runc and ctr of the runtime cache run every image of the images cache on this machine.
// It has no code of its own; the harness is internal/e2e (StartContainerd).
package containerd
