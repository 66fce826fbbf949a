// Package storetest holds an in-memory state store for the tests of the tasks that write to one (storetasks,
// pkitasks) and of the graphs that hold them (model); the real stores are tested in statestore.
package storetest

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"sync"
)

// MemStore is a storetasks.Store in memory. Its methods are safe for the engine's concurrent tasks; a test reads
// or sets Objects and Writes directly between runs.
type MemStore struct {
	mu sync.Mutex
	// Objects are the stored objects by path.
	Objects map[string]string
	// Writes counts the calls of WriteFile.
	Writes int
}

// New returns an empty store.
func New() *MemStore { return &MemStore{Objects: map[string]string{}} }

func (m *MemStore) ReadFile(_ context.Context, path string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.Objects[path]
	if !ok {
		return nil, fmt.Errorf("reading %s: %w", path, fs.ErrNotExist)
	}
	return []byte(v), nil
}

func (m *MemStore) WriteFile(_ context.Context, path string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Objects[path] = string(data)
	m.Writes++
	return nil
}

// Get returns an object's contents ("" when there is none).
func (m *MemStore) Get(path string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Objects[path]
}

// Snapshot returns a copy of every object.
func (m *MemStore) Snapshot() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.Objects)
}
