// Package nodecloud is the node side of the provider seam: the clouds whose instances protokube identifies and
// whose volumes and DNS it uses, each registered by the package that implements it (providers/aws/awsnode,
// providers/gce/gcenode) and linked into a protokube binary by its main's import (cmd/protokube-aws imports
// awsnode). The local provider needs no instance identity and is protokube's own (protokube/provider.go).
//
// It sits below protokube so that a cloud's package depends on it, not on protokube: protokube's own tests may
// then import a cloud's package to run protokube on that cloud's fake.
package nodecloud

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// An Instance is this machine as an instance of its cloud: made once (its cloud's Open), then asked each round.
type Instance interface {
	// Identity is who the cloud says this instance is: its id, which is the node's id, and its addresses.
	Identity() volumetasks.Holder
	// Providers returns the cloud's volumes, claimed as me, and its DNS, for the configuration pc; root is the
	// node's root directory (where the volumes' devices appear). A provider may keep what it found (a hosted
	// zone's id) across rounds; it forgets what it read in the former round.
	Providers(pc *model.ProtokubeConfig, root string, me volumetasks.Holder) (volumetasks.Provider, dnstasks.Provider, error)
}

// An Open reads this instance's identity from its cloud (IMDS, the metadata server) and sets up its clients.
type Open func(ctx context.Context) (Instance, error)

var (
	mu     sync.RWMutex
	clouds = map[string]Open{}
)

// Register makes the cloud name (a spec.cloudProvider value) one this binary has. It is called from an init
// function of the cloud's package; registering a name twice is a programmer's error, and panics.
func Register(name string, open Open) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := clouds[name]; dup {
		panic(fmt.Sprintf("nodecloud: cloud %q registered twice", name))
	}
	clouds[name] = open
}

// Lookup returns the Open of the cloud name; false when this binary does not link it.
func Lookup(name string) (Open, bool) {
	mu.RLock()
	defer mu.RUnlock()
	open, ok := clouds[name]
	return open, ok
}

// Names are the registered clouds' names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(clouds))
}
