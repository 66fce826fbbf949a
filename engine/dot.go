package engine

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteDOT writes the graph in Graphviz DOT: one node per task, labelled with its type, name and lifecycle, and
// an edge from each task to each of its dependencies (the direction of "dependency cycle: A -> B -> A"). Nodes
// and edges are sorted by key, so the output is stable. Dependencies that are not in the graph are drawn
// dashed; `dot -Tsvg` renders it.
func (g *Graph[C]) WriteDOT(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("digraph kubeup {\n  rankdir=LR;\n  node [shape=box];\n")
	nodes := append([]*node[C](nil), g.nodes...)
	sort.Slice(nodes, func(i, j int) bool { return keyLess(nodes[i].task.Key(), nodes[j].task.Key()) })
	for _, n := range nodes {
		k := n.task.Key()
		label := k.Type + "\n" + k.Name + "\n" + g.lifecycleOf(n).String()
		fmt.Fprintf(bw, "  %s [label=%s];\n", dotQuote(k.String()), dotQuote(label))
	}
	for _, n := range nodes {
		from := n.task.Key()
		var deps []Key
		for _, d := range n.task.Deps() {
			if !isNilTask(d) {
				deps = append(deps, d.Key())
			}
		}
		sort.Slice(deps, func(i, j int) bool { return keyLess(deps[i], deps[j]) })
		for _, to := range deps {
			style := ""
			if _, ok := g.byKey[to]; !ok {
				style = " [style=dashed]"
			}
			fmt.Fprintf(bw, "  %s -> %s%s;\n", dotQuote(from.String()), dotQuote(to.String()), style)
		}
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// dotQuote quotes s as a DOT string: backslashes and quotes escaped, newlines as DOT's \n.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
