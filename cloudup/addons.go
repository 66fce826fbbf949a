package cloudup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/kubetasks"
)

// The addons (docs/addons.md) are applied by `kubeup update cluster`, after the cloud graph, through the
// cluster's API with the exported kubeconfig's admin credentials: their changes are in the same plan as the
// cloud's, and a change of an addon needs no new node configuration, so no rolling update.

// addonProbeTimeout bounds the one request that tells whether the API answers: an update whose cluster is not up
// yet waits for it this long, not the engine's deadline.
var addonProbeTimeout = 5 * time.Second

// addonDeadline is how long an addon's task retries once the API answered (a 5xx, a dropped connection).
const addonDeadline = time.Minute

// addonWorld is the world of the addons' graph: the cluster's API.
type addonWorld struct{ api *kubetasks.Client }

func (w addonWorld) KubeAPI() *kubetasks.Client { return w.api }

// addonRun is the addons of one update: the graph's world once the API answered, or why they wait.
type addonRun struct {
	cluster *model.Cluster
	world   addonWorld
	// wait says why the addons are not planned or applied in this update ("" when they are).
	wait string
	// pruned says, of each Pruned task's key, the collection whose stale objects it deletes, and its addon.
	pruned map[engine.Key]prunedCollection
}

type prunedCollection struct {
	addon string
	model.AddonCollection
}

// openAddons reads the kubeconfig's credentials of cluster c (path "" is KubeconfigPath()'s) and asks the API
// its version, for at most addonProbeTimeout. When there are no credentials or the API does not answer, the
// addons wait (wait says why): an update of a cluster that is not up yet still brings its cloud up.
func openAddons(ctx context.Context, c *model.Cluster, path string) *addonRun {
	a := &addonRun{cluster: c}
	cr, err := readKubeconfigCredentials(path, c.Metadata.Name)
	var missing *fs.PathError
	switch {
	case errors.As(err, &missing) && errors.Is(err, fs.ErrNotExist):
		a.wait = "there is no kubeconfig " + missing.Path
		return a
	case err != nil:
		a.wait = err.Error()
		return a
	}
	api, err := kubetasks.NewClient(cr.server.String(), kubetasks.FieldManager, cr.caPEM, cr.certPEM, cr.keyPEM)
	if err != nil {
		a.wait = err.Error()
		return a
	}
	probe, cancel := context.WithTimeout(ctx, addonProbeTimeout)
	defer cancel()
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := api.Get(probe, "/version", &version); err != nil {
		if errors.Is(probe.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer from %s within %s", cr.server, addonProbeTimeout)
		}
		a.wait = fmt.Sprintf("the API does not answer (%v)", err)
		return a
	}
	a.world = addonWorld{api: api}
	return a
}

// waitLine is the report's line that says the addons wait, why, and how to apply them.
func (a *addonRun) waitLine() string {
	n := a.cluster.Metadata.Name
	return fmt.Sprintf("Addons wait: %s. Once `kubeup validate cluster %s` passes, run `kubeup export kubeconfig %s`, then `kubeup update cluster %s --yes` to apply them.",
		a.wait, n, n, n)
}

// build returns the addons' graph: for each object an addon wants, a kubetasks.Object (marked with the addon's
// label: kubeup takes over no object it did not make; the workloads after the addon's other objects: their
// configuration and RBAC first); for each collection an addon can have objects in, a kubetasks.Pruned that
// deletes the objects labelled as the addon's that it no longer wants (all of them when it is disabled), after the
// objects it wants.
func (a *addonRun) build() (*engine.Graph[addonWorld], error) {
	g := engine.NewGraph[addonWorld]()
	a.pruned = map[engine.Key]prunedCollection{}
	for _, addon := range model.Addons(a.cluster) {
		mark := model.AddonLabel + "=" + addon.Name
		var objs []*kubetasks.Object[addonWorld]
		var first, wanted []engine.Task // the objects a workload needs; all of them
		keep := map[model.AddonCollection][]string{}
		for _, o := range addon.Objects {
			obj, err := kubetasks.NewObject[addonWorld](o.Manifest, o.Resource, false)
			if err != nil {
				return nil, fmt.Errorf("addon %s: %w", addon.Name, err)
			}
			obj.Mark = mark
			objs = append(objs, obj)
			wanted = append(wanted, obj)
			if !workloadKinds[o.Kind()] {
				first = append(first, obj)
			}
			coll := model.AddonCollection{APIVersion: o.APIVersion(), Kind: o.Kind(), Resource: o.Resource, Namespace: o.Namespace()}
			keep[coll] = append(keep[coll], o.Name())
		}
		for i, obj := range objs {
			if workloadKinds[addon.Objects[i].Kind()] {
				obj.After = first
			}
			engine.Add(g, obj, engine.WithDeadline(addonDeadline))
		}
		for _, coll := range addon.Collections {
			where := coll.Kind
			if coll.Namespace != "" {
				where += "/" + coll.Namespace
			}
			p := engine.Add(g, &kubetasks.Pruned[addonWorld]{
				Name:     addon.Name + ":" + where,
				ListPath: kubetasks.CollectionPath(coll.APIVersion, coll.Namespace, coll.Resource),
				Selector: mark, Keep: keep[coll], After: wanted,
			}, engine.WithDeadline(addonDeadline))
			a.pruned[p.Key()] = prunedCollection{addon: addon.Name, AddonCollection: coll}
		}
	}
	return g, nil
}

// workloadKinds are the kinds whose pods need the addon's other objects (its ServiceAccount, RBAC, ConfigMap):
// applied after them.
var workloadKinds = map[string]bool{"Deployment": true, "DaemonSet": true, "StatefulSet": true}

// run runs the addons' graph to target, and returns its changes as the plan shows them: a Pruned task's change is
// one deletion per object it deletes (KubeObject/<Kind>/<namespace>/<name>, with a note that says why).
func (a *addonRun) run(ctx context.Context, target engine.Target, o UpdateOptions) (*engine.Plan, error) {
	g, err := a.build()
	if err != nil {
		return nil, err
	}
	res, err := engine.Run(ctx, g, a.world, engine.Options{Target: target, Logger: o.Logger, Progress: o.Progress, Deadline: addonDeadline})
	var plan *engine.Plan
	if res != nil {
		plan = &engine.Plan{Incomplete: res.Plan.Incomplete}
		plan.Add(a.deletions(res.Plan.Changes)...)
	}
	if errors.Is(err, kubetasks.ErrNotKubeups) {
		return plan, fmt.Errorf("the addons of cluster %s: %w; or, to keep yours, disable the addon in spec.addons (for CoreDNS: spec.addons.coreDNS.enabled: false; docs/addons.md)", a.cluster.Metadata.Name, err)
	}
	if err != nil {
		return plan, fmt.Errorf("the addons of cluster %s: %w", a.cluster.Metadata.Name, err)
	}
	return plan, nil
}

// deletions replaces each Pruned task's change by the deletions of the objects it found stale.
func (a *addonRun) deletions(changes []engine.Change) []engine.Change {
	var out []engine.Change
	for _, c := range changes {
		coll, ok := a.pruned[c.Key]
		if !ok {
			out = append(out, c)
			continue
		}
		why := "labelled " + model.AddonLabel + "=" + coll.addon + "; the addon no longer has it"
		if !addonEnabled(a.cluster, coll.addon) {
			why = "labelled " + model.AddonLabel + "=" + coll.addon + "; the addon is disabled"
		}
		for _, f := range c.Fields {
			stale, _ := f.Old.([]string)
			if f.Name != "Stale" {
				continue
			}
			for _, name := range stale {
				key := coll.Kind + "/" + name
				if coll.Namespace != "" {
					key = coll.Kind + "/" + coll.Namespace + "/" + name
				}
				out = append(out, engine.Change{Key: engine.Key{Type: kubetasks.ObjectKeyType, Name: key}, Action: engine.Delete, Note: why})
			}
		}
	}
	return out
}

func addonEnabled(c *model.Cluster, name string) bool {
	for _, a := range model.Addons(c) {
		if a.Name == name {
			return a.Enabled
		}
	}
	return false
}

// planInto adds the addons' dry run to plan; nothing when they wait.
func (a *addonRun) planInto(ctx context.Context, plan *engine.Plan, o UpdateOptions) error {
	if a.wait != "" {
		return nil
	}
	p, err := a.run(ctx, engine.DryRun, o)
	if p != nil {
		plan.Add(p.Changes...)
		plan.Incomplete = append(plan.Incomplete, p.Incomplete...)
	}
	return err
}

// report says, when the addons wait, why and how to apply them: a line of the text report, or a warning in the
// log beside a JSON one.
func (a *addonRun) report(w io.Writer, o UpdateOptions) {
	if a.wait == "" {
		return
	}
	if o.JSON {
		if o.Logger != nil {
			o.Logger.Warn("the addons wait", "cluster", a.cluster.Metadata.Name, "why", a.waitLine())
		}
		return
	}
	fmt.Fprintln(w, a.waitLine())
}
