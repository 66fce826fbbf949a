package cloudup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/storetasks"
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
	// Lock says how an apply waits for the cluster's lock while another run holds it (see Lock).
	Lock LockOptions
	// Engine tunes the engine's concurrency; the zero value is the engine's defaults (adaptive).
	Engine EngineTuning
	// Kubeconfig is the file of `kubeup export kubeconfig` whose context named after the cluster reaches its API,
	// where the addons are applied; "" is KubeconfigPath()'s.
	Kubeconfig string
}

// EngineTuning is the part of engine.Options an update may change: for comparisons (benchmarks), not for use.
type EngineTuning struct {
	Concurrency, InitialWindow int
	FixedConcurrency           bool
}

// Update brings the cloud in line with the cluster's spec: volumes, DNS records, and the complete spec and node
// configurations in the state store. It always runs a dry run first and reports it; with Apply, it then applies
// what the dry run found, and reports what it did. An apply holds the cluster's lock from before its dry run to
// its end: a second apply waits for the first, then finds what the first did.
func (cs *Clusters) Update(ctx context.Context, name string, o UpdateOptions) (*engine.Plan, error) {
	stored, err := cs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if o.Apply {
		unlock, err := cs.Lock(ctx, name, "update --yes", o.Lock)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := unlock(); err != nil && o.Logger != nil {
				o.Logger.Warn("the cluster's lock is left", "cluster", name, "err", err)
			}
		}()
		if stored, err = cs.Get(ctx, name); err != nil { // as it is now that no other run changes the cloud
			return nil, err
		}
	}
	// The spec may hold other etcd members than the cluster runs (written by hand, or by a kubeup that did not
	// check): refused here too, before anything is made for them.
	source := fmt.Sprintf("the spec of cluster %s in %s", name, cs.location(specPath(name)))
	if err := cs.checkEtcdMembership(ctx, source, stored.Cluster, stored.InstanceGroups); err != nil {
		return nil, err
	}
	c, igs, err := cs.Complete(stored)
	if err != nil {
		return nil, err
	}
	p, err := providerFor(c)
	if err != nil {
		return nil, err
	}
	return p.Update(ctx, cs, stored, c, igs, o)
}

func openLocal(c *model.Cluster, cs *Clusters) (*localtasks.Cloud, error) {
	l := c.Spec.Local
	return localtasks.NewCloud(filepath.FromSlash(l.PoolDir), filepath.FromSlash(l.ZoneFile), c.Spec.DNSZone, cs.Store)
}

// A Cleanup is what an apply leaves to delete once it is done, outside the graph (the Auto Scaling groups and
// launch templates, or managed instance groups and instance templates, of groups removed from the spec, and
// their node configurations in the state store; on GCE also the instance templates its groups no longer use).
// Plan says, after the dry run of graph g, what Apply will delete: the plan lists it. Apply deletes it after an
// apply (changed: the apply changed something) and returns the deletions done. A provider builds its own with
// UnusedGroupsCleanup, or with Plan and Apply of its own that retry as RetryCleanup does.
type Cleanup[C any] struct {
	Plan  func(ctx context.Context, g *engine.Graph[C]) ([]engine.Change, error)
	Apply func(ctx context.Context, changed bool) ([]engine.Change, error)
}

// Then is the cleanup that runs cl, then next: each deletion both plan (or do) is listed once, as cl's; next's
// Apply is told of a change when cl deleted something.
func (cl *Cleanup[C]) Then(next *Cleanup[C]) *Cleanup[C] {
	join := func(first, second []engine.Change) []engine.Change {
		seen := engine.Deletions(first)
		for _, c := range second {
			if !seen[c.Key] {
				first = append(first, c)
			}
		}
		return first
	}
	return &Cleanup[C]{
		Plan: func(ctx context.Context, g *engine.Graph[C]) ([]engine.Change, error) {
			a, err := cl.Plan(ctx, g)
			if err != nil {
				return a, err
			}
			b, err := next.Plan(ctx, g)
			return join(a, b), err
		},
		Apply: func(ctx context.Context, changed bool) ([]engine.Change, error) {
			a, err := cl.Apply(ctx, changed)
			if err != nil {
				return a, err
			}
			b, err := next.Apply(ctx, changed || len(a) > 0)
			return join(a, b), err
		},
	}
}

// UnusedGroups is what the instance groups removed from a cluster's spec leave (awstasks.UnusedGroups,
// gcetasks.UnusedGroups, their node configurations: storetasks.StaleObjects): Deletions lists it as the plan's
// deletions, Delete deletes what of it a plan listed.
type UnusedGroups[C any] interface {
	Deletions(ctx context.Context, cloud C, fresh bool) ([]engine.Change, error)
	Delete(ctx context.Context, cloud C, planned []engine.Change) ([]engine.Change, error)
}

// UnusedGroupsCleanup deletes, after an apply, what the instance groups removed from the spec left (unused); the
// dry run lists each object as a deletion, and the apply deletes no other.
func UnusedGroupsCleanup[C any](cloud C, unused UnusedGroups[C], o UpdateOptions) *Cleanup[C] {
	var planned []engine.Change // the dry run's deletions: the apply deletes no other
	return &Cleanup[C]{
		Plan: func(ctx context.Context, _ *engine.Graph[C]) ([]engine.Change, error) {
			err := RetryCleanup(ctx, func(attempt int) (err error) {
				planned, err = unused.Deletions(ctx, cloud, attempt > 1)
				return err
			})
			return planned, err
		},
		Apply: func(ctx context.Context, _ bool) ([]engine.Change, error) {
			var done []engine.Change
			err := RetryCleanup(ctx, func(int) error {
				d, err := unused.Delete(ctx, cloud, planned)
				done = append(done, d...)
				if o.Logger != nil {
					for _, c := range d {
						o.Logger.Info("deleted what an instance group removed from the spec left", "key", c.Key.String())
					}
				}
				return err
			})
			return done, err
		},
	}
}

// RetryCleanup runs attempt (numbered from 1) until it succeeds or fails otherwise than by a rate limit or a
// server error, with backoff, until cleanupDeadline. The cleanup runs outside the engine, so it retries what the
// engine would itself: one attempt makes about five calls, all of which must get through, so a few attempts are
// not enough when a third of the calls are throttled.
//
// After an apply that changed nothing, the run's reads are still true: the apply's cleanup then reads only what
// the run did not (the groups of the region's other zones), so that a no-op update lists each kind once per
// zone. It still deletes what a killed run left.
func RetryCleanup(ctx context.Context, attempt func(int) error) error {
	start := time.Now()
	backoff := 200 * time.Millisecond
	for i := 1; ; i++ {
		err := attempt(i)
		if err == nil || engine.ClassOf(err) != engine.ClassRetryable || time.Since(start)+backoff > cleanupDeadline {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, cleanupMaxBackoff)
	}
}

// cleanupDeadline and cleanupMaxBackoff bound RetryCleanup's retries.
const (
	cleanupDeadline   = 5 * time.Minute
	cleanupMaxBackoff = 5 * time.Second
)

// RunUpdate is the update of a provider's Update: the dry run of the cloud graph build makes (a fresh one for
// each run) on world, the deletions of cl and of the node configurations of the groups removed from c's spec
// (cleaned up last, so that a provider's cl leaves them out), the plan's report on o.Out, and, with o.Apply, the
// apply of what the dry run found once the spec in the store is still stored's, those deletions, and on a cloud
// whose reads lag its writes (a world with ReadsLagWrites() true) dry runs until the cloud shows what the apply
// made.
func RunUpdate[C storetasks.World](ctx context.Context, cs *Clusters, stored *Stored, c *model.Cluster, igs []*model.InstanceGroup,
	o UpdateOptions, world C, build func() (*engine.Graph[C], error), cl *Cleanup[C]) (*engine.Plan, error) {
	stale := UnusedGroupsCleanup(world, cloudgraph.StaleNodeConfigs[C](c, igs), o)
	if cl == nil {
		cl = stale
	} else {
		cl = cl.Then(stale)
	}
	g, err := build()
	if err != nil {
		return nil, err
	}
	opts := engine.Options{Target: engine.DryRun, Logger: o.Logger, Progress: o.Progress,
		Concurrency: o.Engine.Concurrency, InitialWindow: o.Engine.InitialWindow, FixedConcurrency: o.Engine.FixedConcurrency}
	newRun(world)
	res, err := engine.Run(ctx, g, world, opts)
	if err == nil {
		var dels []engine.Change
		if dels, err = cl.Plan(ctx, g); err == nil {
			res.Plan.Add(dels...)
		}
	}
	// The addons, through the cluster's API, once it answers: their changes are part of the same plan.
	var addons *addonRun
	if err == nil {
		addons = openAddons(ctx, c, o.Kubeconfig)
		err = addons.planInto(ctx, res.Plan, o)
	}
	if err != nil {
		if res != nil {
			// What could be planned, then (from the caller) the failures: the plan says it is incomplete.
			explainSpec(res.Plan, stored.Cluster.Metadata.Name)
			if werr := writePlan(o, res.Plan); werr != nil {
				return nil, errors.Join(err, werr)
			}
		}
		return nil, err
	}
	explainSpec(res.Plan, stored.Cluster.Metadata.Name)
	if !o.Apply || res.Plan.Empty() {
		err := writePlan(o, res.Plan)
		addons.report(out(o), o)
		return res.Plan, err
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
	newRun(world)
	applied, err := engine.Run(ctx, g, world, opts)
	if err != nil {
		var re *engine.RunError
		if errors.As(err, &re) && applied != nil {
			fmt.Fprintf(o.Out, "Applied %d of %d changes before the failure.\n", len(applied.Plan.Changes), len(res.Plan.Changes))
		}
		return nil, explainConflict(name, err)
	}
	dels, err := cl.Apply(ctx, !applied.Plan.Empty())
	applied.Plan.Add(dels...)
	if err != nil {
		return nil, fmt.Errorf("cluster %s is up to date, but deleting what the update left unused failed: %w (the next update tries again)", name, err)
	}
	if addons.wait == "" { // else the dry run planned none of them: the apply makes none either
		done, err := addons.run(ctx, engine.Apply, o)
		if done != nil {
			applied.Plan.Add(done.Changes...)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: its cloud is up to date, but applying its addons failed: %w (the next update tries again)", name, err)
		}
	}
	// The report below says a dry run now plans nothing: on a cloud whose reads lag its writes, it is checked.
	var settleErr error
	if w, ok := any(world).(interface{ ReadsLagWrites() bool }); ok && w.ReadsLagWrites() {
		settleErr = settle(ctx, world, build, opts, applied.Plan, name)
	}
	if o.JSON {
		explainSpec(applied.Plan, name)
		if err := applied.Plan.WriteJSON(o.Out); err != nil {
			return nil, err
		}
		addons.report(o.Out, o)
		return applied.Plan, settleErr
	}
	fmt.Fprintf(o.Out, "Applied %d changes to cluster %s:\n", len(applied.Plan.Changes), name)
	for _, c := range applied.Plan.Changes {
		fmt.Fprintf(o.Out, "  %s %s\n", c.Action, c.Key)
	}
	if settleErr != nil {
		return nil, settleErr
	}
	fmt.Fprintln(o.Out, "Cluster is up to date: `kubeup update cluster "+name+"` now reports no changes.")
	addons.report(o.Out, o)
	return applied.Plan, nil
}

// settleWait bounds how long settle waits for the cloud to show what an apply made, and settleFirst is its first
// wait between two dry runs (doubling, up to settleMax).
var (
	settleWait  = 2 * time.Minute
	settleFirst = time.Second
	settleMax   = 15 * time.Second
)

// settle runs dry runs of fresh graphs after an apply until one plans nothing, and returns nil then. A cloud's
// reads may lag its writes (a new EBS volume is missing from DescribeVolumes for a while): while a dry run plans
// any change the apply made (a task that depends on what is not shown yet may plan a change too), settle waits
// and looks again, up to settleWait; then, or at once when a dry run plans only changes the apply did not make
// (something else changes the cloud, or a task that never converges), it returns an error that names the
// changes still planned. Without it, an apply whose creates were not visible yet said the cluster was up to
// date, and the next update planned them again.
func settle[C any](ctx context.Context, world C, build func() (*engine.Graph[C], error), opts engine.Options, applied *engine.Plan, name string) error {
	made := map[engine.Key]bool{}
	for _, c := range applied.Changes {
		made[c.Key] = true
	}
	opts.Target = engine.DryRun
	deadline := time.Now().Add(settleWait)
	wait := settleFirst
	for {
		g, err := build()
		if err != nil {
			return err
		}
		newRun(world)
		res, err := engine.Run(ctx, g, world, opts)
		if err != nil {
			return fmt.Errorf("cluster %s: the changes were applied, but the dry run that checks them failed: %w; run `kubeup update cluster %s` to check again", name, err, name)
		}
		if res.Plan.Empty() {
			return nil
		}
		var pending, other []string
		for _, c := range res.Plan.Changes {
			if made[c.Key] {
				pending = append(pending, string(c.Action)+" "+c.Key.String())
			} else {
				other = append(other, string(c.Action)+" "+c.Key.String())
			}
		}
		if len(pending) == 0 {
			return fmt.Errorf("cluster %s: the changes were applied, but a dry run right after plans changes the apply did not make: %s "+
				"(something else changes the cloud, or a task that never converges): run `kubeup update cluster %s` to see them",
				name, strings.Join(other, ", "), name)
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("cluster %s: the changes were applied, but after %s the cloud's reads still do not show all of them "+
				"(a dry run still plans %s): run `kubeup update cluster %s` again later; it finds what was made, and makes nothing twice",
				name, settleWait, strings.Join(append(pending, other...), ", "), name)
		}
		if opts.Logger != nil {
			opts.Logger.Info("waiting for the cloud to show what the apply made", "cluster", name, "notShownYet", pending, "lookingAgainIn", wait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s: waiting for the cloud to show what the apply made (%s): %w", name, strings.Join(pending, ", "), ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, settleMax)
	}
}

// newRun tells a world that batches its reads (one Describe per resource type feeds every task's Find) that a
// run begins: what it read for the last one is stale.
func newRun(world any) {
	if w, ok := world.(interface{ NewRun() }); ok {
		w.NewRun()
	}
}

// explainConflict says what to do when a task found the cloud changed by someone else between its dry run and
// its change (a run that does not take the cluster's lock, or a hand): the task changed nothing, and a new run
// sees the cloud as it is now.
func explainConflict(name string, err error) error {
	if !errors.Is(err, localtasks.ErrConflict) {
		return err
	}
	return fmt.Errorf("%w\ncluster %s: its cloud was changed by someone else while this update ran (a run that does not take the cluster's lock, or a change by hand); what conflicted was left as it is. Run `kubeup update cluster %s` again to see what remains to do",
		err, name, name)
}

// checkUnchanged refuses when the cluster's spec in the store is no longer the one stored holds: an update
// applies the whole spec, so a change of any object of it (another instance group too) makes its plan stale.
// The refusal names the objects that changed.
func (cs *Clusters) checkUnchanged(ctx context.Context, stored *Stored) error {
	name := stored.Cluster.Metadata.Name
	raw, gen, err := cs.read(ctx, name)
	if err != nil {
		return err
	}
	if bytes.Equal(raw, stored.raw) {
		return nil
	}
	what := ""
	if now, err := cs.decodeStored(ctx, name, raw, gen); err == nil {
		what = " (" + strings.Join(changedObjects(stored, now), ", ") + ")"
	}
	return fmt.Errorf("cluster %s was changed by someone else while this update was planned%s (%w): nothing was applied; run the update again",
		name, what, statestore.ErrConflict)
}

func writePlan(o UpdateOptions, p *engine.Plan) error {
	if o.JSON {
		return p.WriteJSON(out(o))
	}
	return p.WriteText(out(o))
}

// out is where the report goes: o.Out, else stdout.
func out(o UpdateOptions) io.Writer {
	if o.Out == nil {
		return os.Stdout
	}
	return o.Out
}
