package engine

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// compiled is a validated graph in the form the executor runs: nodes by index, dependencies and dependents as
// compressed adjacency lists, and a topological order.
type compiled[C any] struct {
	g          *Graph[C]
	lifecycles []Lifecycle
	depStart   []int32 // deps of i: depList[depStart[i]:depStart[i+1]]
	depList    []int32
	revStart   []int32 // dependents of i: revList[revStart[i]:revStart[i+1]]
	revList    []int32
	order      []int32 // a topological order: dependencies first
}

// Validator is a task with rules that need no look at the world: a path that must be absolute, a field that is
// required, a value's syntax. The engine calls Validate on every task that has it before any task's Find, so one
// bad task stops the whole run before anything changed (a half-converged node is worse than an untouched one).
// The error names the field and the fix; the engine adds the task's key.
type Validator interface {
	Validate() error
}

// Validate checks g for target without touching the world: duplicate keys, dependencies that are not in the
// graph, tasks that cannot render to target, each task's own Validate (see Validator), and cycles. It reports
// every problem it finds, except that a cycle is only looked for in an otherwise valid graph.
func (g *Graph[C]) Validate(target Target) error {
	_, err := g.compile(target)
	return err
}

func (g *Graph[C]) compile(target Target) (*compiled[C], error) {
	if target != Apply && target != DryRun {
		return nil, &ValidationError{Problems: []string{fmt.Sprintf("unknown target %q: want %q or %q", target, Apply, DryRun)}}
	}
	n := len(g.nodes)
	c := &compiled[C]{
		g:          g,
		lifecycles: make([]Lifecycle, n),
		depStart:   make([]int32, n+1),
	}
	problems := append([]string(nil), g.problems...)
	c.depList = make([]int32, 0, n)
	// Tasks are pointers, and a dependency is the very task the graph holds: found by its address first (two
	// tasks may share one, a struct and its first field: the one not kept is found by key, as any other).
	byPtr := g.byPtr
	for i, nd := range g.nodes {
		lc := g.lifecycleOf(nd)
		c.lifecycles[i] = lc
		if v, ok := nd.task.(Validator); ok {
			if err := v.Validate(); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", nd.task.Key(), err))
			}
		}
		if target == Apply && lc.renders() && !nd.canRender {
			problems = append(problems, fmt.Sprintf("%s cannot render to target %s: %T has no method Render(ctx, world, actual, expected, changes) "+
				"(give it one, or a lifecycle that does not render)", nd.task.Key(), target, nd.task))
		}
		deps := nd.task.Deps()
		found := g.found[nd.found0:nd.found1]
		if len(found) != len(deps) {
			found = nil // Deps changed since Add: look every one up
		}
		for k, dep := range deps {
			if found != nil && found[k] >= 0 && g.nodes[found[k]].task == dep {
				c.depList = append(c.depList, found[k]) // the task found when it was added, still the same
				continue
			}
			v := reflect.ValueOf(dep)
			if !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
				continue // an optional dependency that is not set
			}
			if v.Kind() == reflect.Pointer {
				if j, ok := byPtr[v.Pointer()]; ok && g.nodes[j].task == dep {
					c.depList = append(c.depList, j) // the task in the graph, found without hashing its key
					continue
				}
			}
			dk := dep.Key()
			j, ok := g.byKey[dk]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s depends on %s, which is not in the graph", nd.task.Key(), dk))
				continue
			case g.nodes[j].task != dep:
				detail := ""
				if !tasksEqual(g.nodes[j].task, dep) {
					detail = " (" + strings.Join(differingFields(g.nodes[j].task, dep), ", ") + ")"
				}
				problems = append(problems, fmt.Sprintf("%s depends on a copy of %s, not the task in the graph%s: "+
					"depend on the task engine.Add returned, the one that receives the outputs", nd.task.Key(), dk, detail))
				continue
			}
			c.depList = append(c.depList, j)
		}
		c.depStart[i+1] = int32(len(c.depList))
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	c.buildReverse()
	if err := c.sort(); err != nil {
		return nil, err
	}
	return c, nil
}

func isNilTask(t Task) bool {
	if t == nil {
		return true
	}
	v := reflect.ValueOf(t)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func (c *compiled[C]) deps(i int32) []int32 { return c.depList[c.depStart[i]:c.depStart[i+1]] }
func (c *compiled[C]) dependents(i int32) []int32 {
	return c.revList[c.revStart[i]:c.revStart[i+1]]
}

// buildReverse fills the dependents lists from the dependencies.
func (c *compiled[C]) buildReverse() {
	n := len(c.depStart) - 1
	c.revStart = make([]int32, n+2)
	for _, d := range c.depList {
		c.revStart[d+2]++
	}
	for i := 2; i < len(c.revStart); i++ {
		c.revStart[i] += c.revStart[i-1]
	}
	c.revList = make([]int32, len(c.depList))
	for i := 0; i < n; i++ {
		for _, d := range c.deps(int32(i)) {
			c.revList[c.revStart[d+1]] = int32(i)
			c.revStart[d+1]++
		}
	}
	c.revStart = c.revStart[:n+1]
}

// sort computes a topological order with Kahn's algorithm. Nodes left over sit on or behind a cycle.
func (c *compiled[C]) sort() error {
	n := len(c.depStart) - 1
	indeg := make([]int32, n)
	c.order = make([]int32, 0, n)
	for i := 0; i < n; i++ {
		indeg[i] = c.depStart[i+1] - c.depStart[i]
		if indeg[i] == 0 {
			c.order = append(c.order, int32(i))
		}
	}
	for h := 0; h < len(c.order); h++ {
		for _, d := range c.dependents(c.order[h]) {
			indeg[d]--
			if indeg[d] == 0 {
				c.order = append(c.order, d)
			}
		}
	}
	if len(c.order) == n {
		return nil
	}
	return &ValidationError{Problems: []string{"dependency cycle: " + c.describeCycle(indeg)}}
}

// describeCycle finds one shortest cycle among the nodes Kahn's algorithm could not order, and prints it in
// dependency order starting from its smallest key: "File//a -> File//b -> File//a" (a depends on b, b on a).
func (c *compiled[C]) describeCycle(indeg []int32) string {
	dg := simple.NewDirectedGraph()
	for i, d := range indeg {
		if d > 0 {
			dg.AddNode(simple.Node(i))
		}
	}
	selfLoop := -1
	for i, d := range indeg {
		if d == 0 {
			continue
		}
		for _, j := range c.deps(int32(i)) {
			switch {
			case int(j) == i:
				if selfLoop < 0 || keyLess(c.key(int32(i)), c.key(int32(selfLoop))) {
					selfLoop = i
				}
			case indeg[j] > 0:
				dg.SetEdge(simple.Edge{F: simple.Node(i), T: simple.Node(j)})
			}
		}
	}
	if selfLoop >= 0 {
		k := c.key(int32(selfLoop))
		return k.String() + " -> " + k.String()
	}
	var best []int32
	for _, scc := range topo.TarjanSCC(dg) {
		if len(scc) < 2 {
			continue
		}
		in := map[int32]bool{}
		members := make([]int32, len(scc))
		for i, nd := range scc {
			members[i] = int32(nd.ID())
			in[members[i]] = true
		}
		sort.Slice(members, func(a, b int) bool { return keyLess(c.key(members[a]), c.key(members[b])) })
		for _, s := range members {
			if cyc := c.shortestCycleFrom(s, in); cyc != nil && (best == nil || len(cyc) < len(best) ||
				(len(cyc) == len(best) && keyLess(c.key(cyc[0]), c.key(best[0])))) {
				best = cyc
			}
		}
	}
	parts := make([]string, 0, len(best)+1)
	for _, i := range best {
		parts = append(parts, c.key(i).String())
	}
	return strings.Join(append(parts, parts[0]), " -> ")
}

// shortestCycleFrom returns the shortest path s -> ... -> s along dependencies within one strongly connected
// component, without repeating s at the end.
func (c *compiled[C]) shortestCycleFrom(s int32, in map[int32]bool) []int32 {
	parent := map[int32]int32{}
	queue := []int32{s}
	for h := 0; h < len(queue); h++ {
		u := queue[h]
		for _, v := range c.deps(u) {
			if !in[v] {
				continue
			}
			if v == s {
				path := []int32{u}
				for p := u; p != s; {
					p = parent[p]
					path = append(path, p)
				}
				for a, b := 0, len(path)-1; a < b; a, b = a+1, b-1 {
					path[a], path[b] = path[b], path[a]
				}
				return path
			}
			if _, seen := parent[v]; !seen {
				parent[v] = u
				queue = append(queue, v)
			}
		}
	}
	return nil
}

func (c *compiled[C]) key(i int32) Key { return c.g.nodes[i].task.Key() }
