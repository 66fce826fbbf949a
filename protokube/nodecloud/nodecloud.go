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

	"kubeup.dev/kubeup/engine"
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

// A Router is an Instance whose cloud carries the pod network's routes (kubenet: docs/networking.md): on AWS
// the VPC's route tables, on GCE the network's routes. protokube then makes no routes in the node's own table:
// in each round in which its kube-apiserver is ready, it reads the Nodes and adds the tasks PodRoutes returns to
// the round's graph.
type Router interface {
	// PodRoutes returns the round's tasks, bound to the cloud's world (engine.Bind), that make the cloud route
	// each pod range of spec to the instance of the Node that holds it, and remove kubeup's routes to ranges no
	// Node holds. It forgets what it read in the former round; the tasks share what it reads in this one.
	PodRoutes(ctx context.Context, spec PodRoutesSpec) (PodRoutes, error)
}

// PodRoutesSpec is what a round asks a Router for.
type PodRoutesSpec struct {
	// Cluster is the cluster's name: its instances are those the cluster owns (kubernetes.io/cluster/<name>).
	Cluster string
	// PodCIDR is the cluster's pod range (kube-controller-manager's --cluster-cidr): only routes inside it are
	// kubeup's to replace or delete.
	PodCIDR string
	// Routes maps each Node's pod range (a CIDR) to the Node's InternalIP, the private address of its instance.
	Routes map[string]string
}

// PodRoutes is a Router's answer: the round's tasks, the addresses of Routes that are no instance of the
// cluster's (their ranges are routed nowhere this round), and what else the round should warn of (an instance that
// does not forward).
type PodRoutes struct {
	Tasks     []engine.Bound
	Unmatched []string
	Problems  []string
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
