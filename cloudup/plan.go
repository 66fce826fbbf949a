package cloudup

import (
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
)

// explainSpec sets what the cluster's spec changes in a dry run's plan (engine.Plan.Spec), by field path, and
// which parts of the resources' diffs repeat it (engine.Plan.Echoes), so that the text plan shows the spec's
// change once, then each resource with what else it changes.
//
// The spec compared is the complete spec, every default filled in: the last applied one
// (<cluster>/cluster-completed.spec, what the dry run found in the store) against the one this update writes.
// The user's own spec is not kept as it was last applied, and the complete spec shows what the user's change
// means: a kubernetesVersion bump is shown with the component images it changes. The paths name the cluster's
// fields as in the user's spec ("spec.kubelet.maxPods") and an instance group's as
// "instanceGroups[<name>].spec.maxSize". A first update, which creates the complete spec, has none.
func explainSpec(p *engine.Plan, cluster string) {
	completed := engine.Key{Type: "StoreFile", Name: model.CompletedSpecPath(cluster)}
	var oldSpec, newSpec string
	found := false
	for _, c := range p.Changes {
		if c.Key != completed || c.Action != engine.Modify {
			continue
		}
		for _, f := range c.Fields {
			if f.Name == "Contents" {
				oldSpec, newSpec, found = textValue(f.Old), textValue(f.New), true
			}
		}
	}
	if !found {
		return
	}
	changes, ok := engine.DiffStructured(oldSpec, newSpec)
	if !ok {
		return // not a spec kubeup wrote: the resource's own line diff says what changes
	}
	clusterDoc := "Cluster[" + cluster + "]."
	groups := map[string]bool{}
	for _, c := range changes {
		switch {
		case strings.HasPrefix(c.Path, clusterDoc):
			c.Path = strings.TrimPrefix(c.Path, clusterDoc)
		case strings.HasPrefix(c.Path, "InstanceGroup["):
			g, rest, _ := strings.Cut(strings.TrimPrefix(c.Path, "InstanceGroup["), "].")
			groups[g] = true
			if (rest == "apiVersion" || rest == "kind") && (c.Old == engine.Absent || c.New == engine.Absent) {
				continue // a group added or removed: its kind says nothing its path does not
			}
			c.Path = "instanceGroups[" + g + "]." + rest
		}
		p.Spec = append(p.Spec, c)
	}
	p.Echoes = append(p.Echoes,
		engine.Echo{Key: completed, Field: "Contents", Prefix: clusterDoc, SpecPrefix: ""})
	configs := model.NodeConfigPath(cluster, "") + "/"
	for _, c := range p.Changes {
		if c.Key.Type != "StoreFile" || !strings.HasPrefix(c.Key.Name, configs) {
			continue
		}
		p.Echoes = append(p.Echoes, engine.Echo{Key: c.Key, Field: "Shown", Prefix: "cluster.", SpecPrefix: ""})
		g := strings.TrimPrefix(c.Key.Name, configs)
		if strings.HasSuffix(g, ".role") {
			continue // a role's configuration (model.NodeRoleConfig): the spec, no group's
		}
		groups[g] = true
		p.Echoes = append(p.Echoes,
			engine.Echo{Key: c.Key, Field: "Shown", Prefix: "instanceGroup.", SpecPrefix: "instanceGroups[" + g + "]."})
	}
	for g := range groups {
		p.Echoes = append(p.Echoes, engine.Echo{Key: completed, Field: "Contents",
			Prefix: "InstanceGroup[" + g + "].", SpecPrefix: "instanceGroups[" + g + "]."})
	}
}

// textValue is a field's value as text: a string or a pointer to one.
func textValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case *string:
		if v != nil {
			return *v
		}
	}
	return ""
}
