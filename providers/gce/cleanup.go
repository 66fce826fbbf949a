package gceprovider

import (
	"context"
	"strings"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// unusedTemplatesCleanup deletes, after an apply, the cluster's instance templates that its groups no longer use
// (a template change makes a new template and points the groups at it); the dry run lists them as deletions.
func unusedTemplatesCleanup(cloud *gcetasks.Cloud, o cloudup.UpdateOptions) *cloudup.Cleanup[*gcetasks.Cloud] {
	return &cloudup.Cleanup[*gcetasks.Cloud]{
		Plan: func(ctx context.Context, g *engine.Graph[*gcetasks.Cloud]) ([]engine.Change, error) {
			var groups []*gcetasks.InstanceGroupManager
			for _, t := range g.Tasks() {
				if m, ok := t.(*gcetasks.InstanceGroupManager); ok {
					groups = append(groups, m)
				}
			}
			var names []string
			err := cloudup.RetryCleanup(ctx, func(int) (err error) {
				names, err = cloud.UnusedTemplatesAfter(ctx, groups)
				return err
			})
			return templateDeletions(names), err
		},
		Apply: func(ctx context.Context, changed bool) ([]engine.Change, error) {
			var keys []string
			err := cloudup.RetryCleanup(ctx, func(attempt int) (err error) {
				fresh := changed || attempt > 1
				if fresh {
					cloud.NewRun()
				}
				keys, err = cloud.DeleteUnusedTemplates(ctx, true, fresh)
				if o.Logger != nil {
					for _, k := range keys {
						o.Logger.Info("deleted an instance template no group uses", "template", k)
					}
				}
				return err
			})
			var names []string
			for _, k := range keys {
				names = append(names, strings.TrimPrefix(k, "InstanceTemplate/"))
			}
			return templateDeletions(names), err
		},
	}
}

// templateDeletions are the plan's deletions of the instance templates names.
func templateDeletions(names []string) []engine.Change {
	var out []engine.Change
	for _, n := range names {
		out = append(out, engine.Change{Key: engine.Key{Type: "InstanceTemplate", Name: n}, Action: engine.Delete,
			Note: "no managed instance group of the cluster uses it once the update is applied"})
	}
	return out
}
