package cloudup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"kubeup.dev/kubeup/model"
)

// Instance groups are parts of their cluster's spec (see Clusters): creating, changing or deleting one is a
// change of that spec, validated whole and written in one conditional write, as every other change.

// CreateInstanceGroups adds igs to the stored cluster named cluster. A group whose name the cluster has already
// is refused, and so is a change of the etcd membership of a cluster that was applied (checkEtcdMembership).
// The cluster's spec with the new groups is validated (every problem at once, naming source) and, with apply,
// written on the condition that the cluster is still as it was read; without apply nothing is written. When
// someone else wrote the spec meanwhile (another group created, the Cluster changed), it is decided and written
// again over theirs (retryRaced). It returns the cluster as stored (or as it would be).
func (cs *Clusters) CreateInstanceGroups(ctx context.Context, source, cluster string, igs []*model.InstanceGroup, apply bool) (*Stored, error) {
	if err := duplicateGroups(source, igs); err != nil {
		return nil, err
	}
	var written *Stored
	err := cs.retryRaced(ctx, func() error {
		s, err := cs.Get(ctx, cluster)
		if err != nil {
			return err
		}
		for _, ig := range igs {
			if findGroup(s.InstanceGroups, ig.Metadata.Name) != nil {
				return fmt.Errorf("%s: instance group %q already exists in cluster %s: nothing was written; change it with `kubeup edit instancegroup %s --name %s` or `kubeup replace -f FILE`",
					source, ig.Metadata.Name, cluster, ig.Metadata.Name, cluster)
			}
		}
		all := append(slices.Clone(s.InstanceGroups), igs...)
		if err := cs.checkEtcdMembership(ctx, source, s.Cluster, all); err != nil {
			return err
		}
		if !apply {
			c, checked, err := cs.check(source, s.Cluster, all)
			if err != nil {
				return err
			}
			written, err = newStored(c, checked, s.Generation, nil)
			return err
		}
		written, _, err = cs.writeOver(ctx, source, s, s.Cluster, all)
		return err
	})
	if err != nil {
		return nil, err
	}
	return written, nil
}

// EtcdMembersError says an instance group cannot be deleted: its node runs etcd members.
type EtcdMembersError struct {
	Cluster, Group string
	// Members are the etcd members the group runs, and what deleting it would do to each etcd cluster.
	Members []string
}

func (e *EtcdMembersError) Error() string {
	return fmt.Sprintf("instance group %s of cluster %s runs etcd members, and deleting it would take them down: %s. Nothing was written. "+
		"kubeup does not remove members from a running etcd cluster (the others would go on counting the missing member in their quorum); "+
		"keep the group, or to run a smaller control plane create a new cluster with --control-plane-count",
		e.Group, e.Cluster, strings.Join(e.Members, "; "))
}

// DeleteInstanceGroup removes the instance group named group from the stored cluster named cluster, and returns
// it as the cluster ran it (its complete spec). A group whose node runs etcd members (in the complete spec) is
// refused with an *EtcdMembersError that says which, and what it would break. The spec without the group is
// validated; with apply it is written on the condition that the cluster is still as it was read (when someone
// else wrote it meanwhile, it is read again and decided again: retryRaced), without apply nothing is written.
// The cloud is not changed: `kubeup update cluster` does that.
func (cs *Clusters) DeleteInstanceGroup(ctx context.Context, cluster, group string, apply bool) (*model.InstanceGroup, error) {
	var deleted *model.InstanceGroup
	err := cs.retryRaced(ctx, func() error {
		s, err := cs.Get(ctx, cluster)
		if err != nil {
			return err
		}
		ig := findGroup(s.InstanceGroups, group)
		if ig == nil {
			return fmt.Errorf("cluster %s has no instance group %q: it has %s (list them with `kubeup get instancegroups --name %s`)",
				cluster, group, strings.Join(groupNames(s.InstanceGroups), ", "), cluster)
		}
		full, fullIGs := model.Complete(s.Cluster, s.InstanceGroups)
		if c := findGroup(fullIGs, group); c != nil {
			ig = c
		}
		if held := heldMembers(full, group); len(held) > 0 {
			return &EtcdMembersError{Cluster: cluster, Group: group, Members: held}
		}
		rest := slices.DeleteFunc(slices.Clone(s.InstanceGroups), func(g *model.InstanceGroup) bool { return g.Metadata.Name == group })
		source := fmt.Sprintf("delete instancegroup %s", group)
		if !apply {
			_, _, err = cs.check(source, s.Cluster, rest)
		} else {
			_, _, err = cs.writeOver(ctx, source, s, s.Cluster, rest)
		}
		deleted = ig
		return err
	})
	return deleted, err
}

// heldMembers describes the etcd members of a complete spec that run on group's node, and what losing them does
// to their etcd cluster's quorum.
func heldMembers(c *model.Cluster, group string) []string {
	var held []string
	for _, e := range c.Spec.EtcdClusters {
		for _, m := range e.Members {
			if m.InstanceGroup != group {
				continue
			}
			n := len(e.Members)
			quorum := n/2 + 1
			what := fmt.Sprintf("member %s of etcd cluster %s (%d members, quorum %d): ", m.Name, e.Name, n, quorum)
			switch left := n - 1; {
			case left == 0:
				what += "its only member, so the cluster's API stops and its data is left on a volume no node runs"
			case left >= quorum:
				what += fmt.Sprintf("%d members would be left to keep the quorum of %d, so it would survive %d more failures instead of %d",
					left, quorum, left-quorum, n-quorum)
			default:
				what += fmt.Sprintf("%d members would be left, fewer than the quorum of %d: the cluster's API stops", left, quorum)
			}
			held = append(held, what)
		}
	}
	return held
}

// checkEtcdMembership refuses c with igs, a change of the spec of a cluster that was applied (read from source),
// when the members of an etcd cluster it ran are not those it was last applied with (model.CompletedSpecPath):
// a ControlPlane group added or removed, a role changed to or from ControlPlane, or spec.etcdClusters' members
// written anew. The members of a running etcd cluster started knowing each other (--initial-cluster); new
// members listed beside a running one would not join it, and two of three could even start a second, empty
// cluster. kubeup does not add members to, or remove them from, a running etcd cluster. An etcd cluster added
// whole (its members all new: they start a cluster of their own) or removed whole is not such a change. Before
// the first apply, nothing runs yet.
//
// A change of spec.networking.podNetwork is refused too: the nodes' pod network is switched only by replacing
// every node, and while they are replaced one by one the pods of old and new nodes do not reach each other (a
// flannel node routes no range of a kubenet node: that node runs no flanneld; a kubenet node's protokube
// refuses a range flannel.1 routes), and a node not replaced keeps the old network's routes or device.
func (cs *Clusters) checkEtcdMembership(ctx context.Context, source string, c *model.Cluster, igs []*model.InstanceGroup) error {
	name := c.Metadata.Name
	applied, err := cs.applied(ctx, name)
	if err != nil || applied == nil {
		return err
	}
	after, _ := model.Complete(c, igs)
	if now := after.Spec.Networking.PodNetwork; now != applied.PodNetwork {
		err = fmt.Errorf("%s: spec.networking.podNetwork: %s, but cluster %s was applied with %s, and kubeup does not switch the pod network of a running cluster "+
			"(while its nodes were replaced one by one, the pods of old and new nodes would not reach each other): nothing was written. "+
			"Set spec.networking.podNetwork back to %s, or create a new cluster with %s (docs/networking.md)",
			source, now, name, applied.PodNetwork, applied.PodNetwork, now)
		if _, _, verr := cs.check(source, c, igs); verr != nil {
			return fmt.Errorf("%w\nThe spec has these problems too: %w", err, verr)
		}
		return err
	}
	added, removed := memberChanges(applied.EtcdClusters, after.Spec.EtcdClusters)
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	var what []string
	if len(added) > 0 {
		what = append(what, "add "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		what = append(what, "remove "+strings.Join(removed, ", "))
	}
	err = fmt.Errorf("%s: this change of cluster %s would %s; the cluster was applied with other etcd members, and kubeup does not change the membership of a running etcd cluster "+
		"(its members started knowing each other): nothing was written. Add Node groups freely; keep the ControlPlane groups, and spec.etcdClusters, as they were applied (%s holds that spec)",
		source, name, strings.Join(what, " and "), cs.location(model.CompletedSpecPath(name)))
	// The spec's other problems, with their field paths, at once: its members may be one of them
	// (spec.etcdClusters naming a group that is not there).
	if _, _, verr := cs.check(source, c, igs); verr != nil {
		return fmt.Errorf("%w\nThe spec has these problems too: %w", err, verr)
	}
	return err
}

// applied returns the etcd clusters and the pod network the last `update cluster --yes` of the cluster named name
// applied (model.CompletedSpecPath, read leniently: another kubeup version may have written it), or nil when it
// was never applied. A spec that cannot be read is an error: which etcd members run cannot be known then.
func (cs *Clusters) applied(ctx context.Context, name string) (*model.Applied, error) {
	p := model.CompletedSpecPath(name)
	data, err := cs.Store.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := model.AppliedOf(cs.location(p), data)
	if err != nil {
		return nil, fmt.Errorf("the spec cluster %s was last applied with cannot be read (%w), so which etcd members run cannot be known: nothing was written", name, err)
	}
	return a, nil
}

// memberChanges lists the etcd members of after that before does not have, and those of before that after does
// not, as "member a of etcd main (instance group control-plane-a)", for the etcd clusters both have.
func memberChanges(before, after []model.EtcdClusterSpec) (added, removed []string) {
	members := func(clusters []model.EtcdClusterSpec, in []model.EtcdClusterSpec) []string {
		var out []string
		for _, e := range clusters {
			if !slices.ContainsFunc(in, func(o model.EtcdClusterSpec) bool { return o.Name == e.Name }) {
				continue // added or removed whole
			}
			for _, m := range e.Members {
				out = append(out, fmt.Sprintf("member %s of etcd %s (instance group %s)", m.Name, e.Name, m.InstanceGroup))
			}
		}
		return out
	}
	b, a := members(before, after), members(after, before)
	for _, m := range a {
		if !slices.Contains(b, m) {
			added = append(added, m)
		}
	}
	for _, m := range b {
		if !slices.Contains(a, m) {
			removed = append(removed, m)
		}
	}
	return added, removed
}

// findGroup returns the instance group of igs named name, or nil.
func findGroup(igs []*model.InstanceGroup, name string) *model.InstanceGroup {
	for _, ig := range igs {
		if ig.Metadata.Name == name {
			return ig
		}
	}
	return nil
}

func groupNames(igs []*model.InstanceGroup) []string {
	names := make([]string, len(igs))
	for i, ig := range igs {
		names[i] = ig.Metadata.Name
	}
	return names
}
