// Package storetasks holds the tasks that write to the state store, the bucket or directory where kubeup keeps
// each cluster's spec and the configuration its nodes read at boot.
//
// It defines the small interface it needs from a store (statestore implements it) and imports no SDK.
package storetasks

import "context"

// Store is what the tasks of this package need from a state store. Paths are relative to the store's root and
// use forward slashes ("demo.example.com/nodeup/nodes").
type Store interface {
	// ReadFile returns the object's contents; an absent object is an error that matches fs.ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces the object atomically: a reader sees the old contents or the new, never a mix.
	WriteFile(ctx context.Context, path string, data []byte) error
}

// World is a world that reaches a state store: every cloud's world does.
type World interface {
	StateStore() Store
}
