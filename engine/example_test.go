package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"kubeup.dev/kubeup/engine"
)

// Store is a toy world: named values in memory.
type Store struct {
	mu   sync.Mutex
	data map[string]string
}

func NewStore() *Store { return &Store{data: map[string]string{}} }

// Record is a task: a named value in a Store, optionally after another record.
type Record struct {
	Name  string
	Value *string
	After *Record `kubeup:"-"` // ordering only, not part of the record's state
}

var _ engine.Resource[*Record, *Store] = (*Record)(nil)
var _ engine.Renderer[*Record, *Store] = (*Record)(nil)

func (r *Record) Key() engine.Key { return engine.Key{Type: "Record", Name: r.Name} }

func (r *Record) Deps() []engine.Task {
	if r.After == nil {
		return nil
	}
	return []engine.Task{r.After}
}

func (r *Record) Find(ctx context.Context, s *Store) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[r.Name]
	if !ok {
		return nil, nil
	}
	return &Record{Name: r.Name, Value: &v}, nil
}

func (r *Record) CheckChanges(actual, expected, changes *Record) error {
	if actual == nil && expected.Value == nil {
		return errors.New("Value is required to create a record")
	}
	return nil
}

func (r *Record) Render(ctx context.Context, s *Store, actual, expected, changes *Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[expected.Name] = *expected.Value
	return nil
}

func ptr[T any](v T) *T { return &v }

func buildRecords() *engine.Graph[*Store] {
	g := engine.NewGraph[*Store]()
	base := engine.Add(g, &Record{Name: "base", Value: ptr("1")})
	engine.Add(g, &Record{Name: "top", Value: ptr("2"), After: base})
	return g
}

// A dry run, an apply, and a second dry run that has nothing left to do.
func Example() {
	ctx := context.Background()
	store := NewStore()
	store.data["top"] = "old"

	res, err := engine.Run(ctx, buildRecords(), store, engine.Options{Target: engine.DryRun})
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Plan.WriteText(os.Stdout)

	if _, err := engine.Run(ctx, buildRecords(), store, engine.Options{Target: engine.Apply}); err != nil {
		fmt.Println(err)
		return
	}
	res, _ = engine.Run(ctx, buildRecords(), store, engine.Options{Target: engine.DryRun})
	res.Plan.WriteText(os.Stdout)
	// Output:
	// Will create resources:
	//   Record/base
	//     Value    1
	// Will modify resources:
	//   Record/top
	//     Value    old -> 2
	// Must specify --yes to apply changes
	// No changes need to be applied
}

// A cycle is found before anything is read, and reported as one minimal cycle in dependency order.
func ExampleGraph_Validate() {
	g := engine.NewGraph[*Store]()
	a := &Record{Name: "a", Value: ptr("1")}
	b := &Record{Name: "b", Value: ptr("2"), After: a}
	a.After = b
	engine.Add(g, a)
	engine.Add(g, b)
	fmt.Println(g.Validate(engine.Apply))
	// Output: invalid task graph: dependency cycle: Record/a -> Record/b -> Record/a
}

func ExamplePlan_WriteJSON() {
	res, _ := engine.Run(context.Background(), buildRecords(), NewStore(), engine.Options{})
	res.Plan.Changes = res.Plan.Changes[:1]
	res.Plan.WriteJSON(os.Stdout)
	// Output:
	// {
	//   "apiVersion": "kubeup.dev/v1alpha3",
	//   "kind": "Plan",
	//   "summary": {
	//     "create": 1,
	//     "modify": 0,
	//     "replace": 0,
	//     "delete": 0
	//   },
	//   "incomplete": [],
	//   "spec": [],
	//   "changes": [
	//     {
	//       "key": "Record/base",
	//       "type": "Record",
	//       "name": "base",
	//       "action": "create",
	//       "fields": [
	//         {
	//           "name": "Value",
	//           "before": null,
	//           "after": "1"
	//         }
	//       ]
	//     }
	//   ]
	// }
}

// A text plan shows a change to a YAML or JSON text by field path, and a list of flags flag by flag.
func ExampleDiffStructured() {
	old := "spec:\n  containers:\n  - name: kubelet\n    command: [kubelet, --max-pods=110]\n  zones: [a]\n"
	new := "spec:\n  containers:\n  - name: kubelet\n    command: [kubelet, --max-pods=120]\n  zones: [a, b]\n"
	changes, _ := engine.DiffStructured(old, new)
	for _, c := range changes {
		fmt.Printf("%s: removed %v added %v; %v -> %v\n", c.Path, c.Removed, c.Added, c.Old, c.New)
	}
	// Output:
	// spec.containers[kubelet].command: removed [--max-pods=110] added [--max-pods=120]; <nil> -> <nil>
	// spec.zones[1]: removed [] added []; <none> -> b
}

func ExampleGraph_WriteDOT() {
	buildRecords().WriteDOT(os.Stdout)
	// Output:
	// digraph kubeup {
	//   rankdir=LR;
	//   node [shape=box];
	//   "Record/base" [label="Record\nbase\nSync"];
	//   "Record/top" [label="Record\ntop\nSync"];
	//   "Record/top" -> "Record/base";
	// }
}
