package kubetasks

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"kubeup.dev/kubeup/engine"
)

// Pruned deletes the objects of one collection that carry kubeup's label (Selector) and that kubeup no longer
// wants (not in Keep): a bootstrap token's Secret after the token was replaced. Objects without the label are
// never touched, whatever their names. Find lists them (Stale); Render deletes each.
type Pruned[C World] struct {
	// Name is the task's name: the collection, as plans show it (Secret/kube-system/bootstrap-token).
	Name string
	// ListPath is the collection's API path (/api/v1/namespaces/kube-system/secrets).
	ListPath string `kubeup:"-"`
	// Selector is the label selector of kubeup's objects (key=value).
	Selector string `kubeup:"-"`
	// Keep are the names of the objects kubeup wants.
	Keep []string `kubeup:"-"`
	// Stale is, in the found task, the names of kubeup's objects it no longer wants.
	Stale []string `kubeup:"nilempty"`
	// After lists tasks to run first (the objects that replace the stale ones).
	After []engine.Task `kubeup:"-"`
}

var _ engine.Renderer[*Pruned[World], World] = (*Pruned[World])(nil)

func (p *Pruned[C]) Key() engine.Key     { return engine.Key{Type: "KubePruned", Name: p.Name} }
func (p *Pruned[C]) Deps() []engine.Task { return p.After }

// Find lists the collection's objects that carry the label and are not kept.
func (p *Pruned[C]) Find(ctx context.Context, world C) (*Pruned[C], error) {
	var list apiList
	if err := world.KubeAPI().Get(ctx, p.ListPath+"?"+url.Values{"labelSelector": {p.Selector}}.Encode(), &list); err != nil {
		return nil, err
	}
	actual := &Pruned[C]{Name: p.Name, ListPath: p.ListPath, Selector: p.Selector, Keep: p.Keep, After: p.After}
	for _, item := range list.Items {
		name, _ := dig(item, "metadata", "name").(string)
		if name != "" && !slices.Contains(p.Keep, name) {
			actual.Stale = append(actual.Stale, name)
		}
	}
	slices.Sort(actual.Stale)
	return actual, nil
}

func (p *Pruned[C]) CheckChanges(actual, expected, changes *Pruned[C]) error {
	if expected.Selector == "" {
		return fmt.Errorf("pruned %s: a label selector is required: kubeup deletes only what it labelled", expected.Name)
	}
	return nil
}

// Render deletes each stale object.
func (p *Pruned[C]) Render(ctx context.Context, world C, actual, expected, changes *Pruned[C]) error {
	if actual == nil {
		return nil
	}
	for _, name := range actual.Stale {
		if err := world.KubeAPI().Delete(ctx, expected.ListPath+"/"+name); err != nil {
			return fmt.Errorf("deleting %s/%s: %w", expected.Name, name, err)
		}
		engine.Logger(ctx).Info("deleted an object kubeup no longer wants", "object", expected.ListPath+"/"+name)
	}
	return nil
}
