package cloudup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// UpdateOptions say how Update runs.
type UpdateOptions struct {
	// Apply makes the changes; otherwise Update is a dry run that only reports them.
	Apply bool
	// JSON writes the plan as JSON (engine.Plan.WriteJSON) instead of text.
	JSON bool
	// Out receives the report (stdout); Logger and Progress the logs (stderr).
	Out      io.Writer
	Logger   *slog.Logger
	Progress io.Writer
}

// Update brings the cloud in line with the cluster's spec: volumes, DNS records, and the complete spec and node
// configurations in the state store. It always runs a dry run first and reports it; with Apply, it then applies
// what the dry run found, and reports what it did.
func (cs *Clusters) Update(ctx context.Context, name string, o UpdateOptions) (*engine.Plan, error) {
	stored, err := cs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	c, igs, err := cs.Complete(stored)
	if err != nil {
		return nil, err
	}
	switch c.Spec.CloudProvider {
	case model.CloudLocal:
		cloud, err := openLocal(c, cs)
		if err != nil {
			return nil, err
		}
		build := func() (*engine.Graph[*localtasks.Cloud], error) { return model.BuildLocalCloudGraph(c, igs) }
		return update(ctx, cs, stored, cloud, build, o)
	default:
		return nil, fmt.Errorf("cluster %s: cloudProvider %s: kubeup cannot update %s clusters yet (its provider is a later issue); the spec is stored and valid, and the local provider works today",
			name, c.Spec.CloudProvider, c.Spec.CloudProvider)
	}
}

func openLocal(c *model.Cluster, cs *Clusters) (*localtasks.Cloud, error) {
	l := c.Spec.Local
	return localtasks.NewCloud(filepath.FromSlash(l.PoolDir), filepath.FromSlash(l.ZoneFile), c.Spec.DNSZone, cs.Store)
}

func update[C any](ctx context.Context, cs *Clusters, stored *Stored, world C, build func() (*engine.Graph[C], error), o UpdateOptions) (*engine.Plan, error) {
	g, err := build()
	if err != nil {
		return nil, err
	}
	opts := engine.Options{Target: engine.DryRun, Logger: o.Logger, Progress: o.Progress}
	res, err := engine.Run(ctx, g, world, opts)
	if err != nil {
		return nil, err
	}
	if !o.Apply || res.Plan.Empty() {
		return res.Plan, writePlan(o, res.Plan)
	}

	// The spec must still be the one this plan was made from: another operator may have replaced it meanwhile.
	name := stored.Cluster.Metadata.Name
	if err := cs.checkUnchanged(ctx, stored); err != nil {
		return nil, err
	}

	g, err = build() // a fresh graph: the dry run's tasks hold outputs of what it found
	if err != nil {
		return nil, err
	}
	opts.Target = engine.Apply
	applied, err := engine.Run(ctx, g, world, opts)
	if err != nil {
		var re *engine.RunError
		if errors.As(err, &re) && applied != nil {
			fmt.Fprintf(o.Out, "Applied %d of %d changes before the failure.\n", len(applied.Plan.Changes), len(res.Plan.Changes))
		}
		return nil, err
	}
	if o.JSON {
		return applied.Plan, applied.Plan.WriteJSON(o.Out)
	}
	fmt.Fprintf(o.Out, "Applied %d changes to cluster %s:\n", len(applied.Plan.Changes), name)
	for _, c := range applied.Plan.Changes {
		fmt.Fprintf(o.Out, "  %s %s\n", c.Action, c.Key)
	}
	fmt.Fprintln(o.Out, "Cluster is up to date: `kubeup update cluster "+name+"` now reports no changes.")
	return applied.Plan, nil
}

// checkUnchanged refuses when the cluster's specs in the store are no longer those stored holds: its config or
// any instance group changed, appeared or went. Every object is compared, not only config's generation: a
// replace that changes only instance groups writes config back unchanged, and a content-hash generation
// (file://, and the ETag of s3://) does not change with it.
func (cs *Clusters) checkUnchanged(ctx context.Context, stored *Stored) error {
	name := stored.Cluster.Metadata.Name
	now, err := cs.Get(ctx, name)
	if err != nil {
		return err
	}
	if !maps.EqualFunc(now.raw, stored.raw, bytes.Equal) {
		return fmt.Errorf("cluster %s was changed by someone else while this update was planned: nothing was applied; run the update again", name)
	}
	return nil
}

func writePlan(o UpdateOptions, p *engine.Plan) error {
	out := o.Out
	if out == nil {
		out = os.Stdout
	}
	if o.JSON {
		return p.WriteJSON(out)
	}
	return p.WriteText(out)
}
