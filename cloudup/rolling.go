package cloudup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"kubeup.dev/kubeup/model"
)

// RollingOptions say what RollingUpdate replaces and how.
type RollingOptions struct {
	// Apply replaces the machines; otherwise RollingUpdate only lists them.
	Apply bool
	// InstanceGroups, when not empty, are the only instance groups looked at.
	InstanceGroups []string
	// Force replaces every machine, up to date or not.
	Force bool
	// CloudOnly takes the health checks from what the cloud shows (instances in service, etcd member volumes
	// attached to them: what protokube claims) instead of the cluster's API and etcd. For a cluster whose API
	// cannot be reached; the log says which the checks were based on.
	CloudOnly bool
	// Kubeconfig is the file of `kubeup export kubeconfig` (""; KubeconfigPath()'s) the API checks use.
	Kubeconfig string
	// Timeout bounds the wait for each replacement to be in service, Ready and its members healthy (default
	// 15m); Interval is how often it looks (default 10s).
	Timeout, Interval time.Duration
	// Out receives the table and the summary (stdout); Logger the log (stderr).
	Out    io.Writer
	Logger *slog.Logger
	// Lock says how a replacing run waits for the cluster's lock.
	Lock LockOptions
}

// RollingInstance is one machine of an instance group, as a rolling update lists it.
type RollingInstance struct {
	// Group is the instance group; ControlPlane whether it is a control-plane group.
	Group        string
	ControlPlane bool
	// ID is the cloud's id of the machine; Zone its zone.
	ID, Zone string
	// Addresses are the machine's IP addresses, when the cloud says (to match etcd members to machines).
	Addresses []string
	// NeedsUpdate says the machine does not run its group's current configuration, and Reason why.
	NeedsUpdate bool
	Reason      string
	// Ready says the cloud counts the machine as serving (AWS: InService and Healthy; GCE: RUNNING).
	Ready bool
	// UID identifies this incarnation of the machine when ID does not (GCE recreates an instance under its
	// name, with a new numeric id); "" when ID does.
	UID string
	// Ref is what the cloud's Replace needs to find the machine when its ID does not say (GCE: its zone,
	// managed instance group and URL); nil when it does. Only the provider that listed the machine reads it.
	Ref any
}

// RollingGroup is one instance group's machines.
type RollingGroup struct {
	Name         string
	ControlPlane bool
	// Min, Target and Max are the group's sizes in the cloud.
	Min, Target, Max int32
	Instances        []RollingInstance
}

// holds reports whether an etcd member's holder (a machine's id or address) is this machine.
func (i RollingInstance) holds(holder string) bool {
	return holder != "" && (holder == i.ID || slices.Contains(i.Addresses, holder))
}

// A RollingCloud is what a rolling update needs of a cloud (Provider.OpenRolling): the machines of the instance
// groups, and replacing one through its group. When it is a Health too, --cloudonly takes its checks from it.
type RollingCloud interface {
	// Groups lists the machines of the instance groups igs (in that order).
	Groups(ctx context.Context, igs []*model.InstanceGroup) ([]RollingGroup, error)
	// Replace starts the replacement of one machine through its group: the group makes a new machine from the
	// group's current configuration in its place.
	Replace(ctx context.Context, i RollingInstance) error
}

// Health is what a rolling update checks before and after it takes a machine down. The API's (validate
// cluster) and the cloud's (--cloudonly) implement it; tests may bring their own.
type Health interface {
	// Basis says what the checks are based on, for the log.
	Basis() string
	// Etcd reports every etcd member of the spec: where it runs and whether it is healthy.
	Etcd(ctx context.Context) ([]MemberHealth, error)
	// Validate returns the cluster's problems, one line each; none when it validates.
	Validate(ctx context.Context) ([]string, error)
}

// MemberHealth is one etcd member as a Health sees it.
type MemberHealth struct {
	// EtcdCluster and Member name the member (main, a).
	EtcdCluster string `json:"etcdCluster"`
	Member      string `json:"member"`
	// Holder is the machine that runs it, by id or address; "" when none does.
	Holder string `json:"holder,omitempty"`
	// Healthy says it answers as healthy; Why says why not.
	Healthy bool   `json:"healthy"`
	Why     string `json:"why,omitempty"`
}

func (m MemberHealth) String() string { return m.EtcdCluster + "/" + m.Member }

// RollingUpdate lists the machines of the cluster's instance groups whose configuration is not their group's
// current one, as a table on o.Out; with o.Apply it replaces them (all of them with o.Force) one at a time,
// control plane first. Before it takes a control-plane machine down it checks that every etcd cluster keeps its
// quorum without the members that machine runs, and before any machine that the cluster validates; after, it
// waits until the group has its target of machines in service, none of them the old one, and (with the API's
// checks) the cluster validates and every member is healthy, before the next. It stops at the first failure,
// before taking down anything more, and says what it did: how many machines it replaced, and whether the one it
// stopped at was taken down.
func (cs *Clusters) RollingUpdate(ctx context.Context, name string, o RollingOptions) error {
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Minute
	}
	if o.Interval == 0 {
		o.Interval = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	stored, err := cs.Get(ctx, name)
	if err != nil {
		return err
	}
	c, igs, err := cs.Complete(stored)
	if err != nil {
		return err
	}
	cloud, err := cs.openRolling(ctx, c, igs)
	if err != nil {
		return err
	}
	igs, err = selectGroups(name, igs, o.InstanceGroups)
	if err != nil {
		return err
	}
	groups, err := cloud.Groups(ctx, igs)
	if err != nil {
		return err
	}
	writeRollingTable(o.Out, groups)
	todo := toReplace(groups, o.Force)
	if len(todo) == 0 {
		fmt.Fprintf(o.Out, "No machine of cluster %s needs to be replaced.\n", name)
		return nil
	}
	if !o.Apply {
		machines := "machines"
		if len(todo) == 1 {
			machines = "machine"
		}
		fmt.Fprintf(o.Out, "%d %s would be replaced, control plane first. Must specify --yes to rolling-update.\n", len(todo), machines)
		return nil
	}
	health, err := cs.rollingHealth(ctx, c, igs, cloud, o)
	if err != nil {
		return err
	}
	unlock, err := cs.Lock(ctx, name, "rolling-update --yes", o.Lock)
	if err != nil {
		return err
	}
	defer func() {
		if err := unlock(); err != nil {
			o.Logger.Warn("the cluster's lock is left", "cluster", name, "err", err)
		}
	}()
	r := &roller{cloud: cloud, health: health, igs: igs, o: o}
	return r.replaceAll(ctx, name, todo)
}

// replaceAll replaces the machines todo one at a time, in order, and stops at the first failure. Its error says
// exactly what was done: how many machines were replaced, and whether the one it stopped at was taken down.
func (r *roller) replaceAll(ctx context.Context, name string, todo []RollingInstance) error {
	machines := func(n int) string {
		if n == 1 {
			return "1 machine"
		}
		return fmt.Sprintf("%d machines", n)
	}
	for n, i := range todo {
		if err := r.replace(ctx, i); err != nil {
			done := fmt.Sprintf("%d of %d machines replaced", n, len(todo))
			var td *takenDownError
			switch {
			case errors.As(err, &td) && td.asked:
				return fmt.Errorf("cluster %s: rolling update stopped: %s; asking the cloud to replace %s (%s) failed, so it may or may not "+
					"have been taken down; nothing more was: %w", name, done, i.ID, i.Group, td.err)
			case errors.As(err, &td):
				return fmt.Errorf("cluster %s: rolling update stopped: %s, and %s (%s) taken down, whose replacement is not confirmed "+
					"ready and healthy; nothing more was taken down: %w", name, done, i.ID, i.Group, td.err)
			}
			return fmt.Errorf("cluster %s: rolling update stopped before taking down %s (%s): %s, and nothing more taken down: %w",
				name, i.ID, i.Group, done, err)
		}
		fmt.Fprintf(r.o.Out, "Replaced %s (%s): %d of %d.\n", i.ID, i.Group, n+1, len(todo))
	}
	fmt.Fprintf(r.o.Out, "Rolling update of cluster %s is done: %s replaced.\n", name, machines(len(todo)))
	return nil
}

// takenDownError is the failure of a replacement once the cloud was asked to take the machine down: asked, when
// that request itself failed (the machine may or may not be down), else while waiting for its replacement.
type takenDownError struct {
	asked bool
	err   error
}

func (e *takenDownError) Error() string { return e.err.Error() }
func (e *takenDownError) Unwrap() error { return e.err }

// selectGroups returns the instance groups named in only (all when empty), control-plane groups first, each part
// sorted by name.
func selectGroups(cluster string, igs []*model.InstanceGroup, only []string) ([]*model.InstanceGroup, error) {
	var out []*model.InstanceGroup
	for _, n := range only {
		i := slices.IndexFunc(igs, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == n })
		if i < 0 {
			var names []string
			for _, ig := range igs {
				names = append(names, ig.Metadata.Name)
			}
			return nil, fmt.Errorf("--instance-group %s: cluster %s has no such instance group (it has %s)", n, cluster, strings.Join(names, ", "))
		}
		if !slices.Contains(out, igs[i]) {
			out = append(out, igs[i])
		}
	}
	if len(only) == 0 {
		out = slices.Clone(igs)
	}
	slices.SortStableFunc(out, func(a, b *model.InstanceGroup) int {
		ac, bc := a.Spec.Role == model.RoleControlPlane, b.Spec.Role == model.RoleControlPlane
		switch {
		case ac && !bc:
			return -1
		case bc && !ac:
			return 1
		}
		return strings.Compare(a.Metadata.Name, b.Metadata.Name)
	})
	return out, nil
}

// toReplace are the machines to replace, in order: the groups' order (control plane first), then by id.
func toReplace(groups []RollingGroup, force bool) []RollingInstance {
	var out []RollingInstance
	for _, g := range groups {
		for _, i := range g.Instances {
			if i.NeedsUpdate || force {
				out = append(out, i)
			}
		}
	}
	return out
}

// writeRollingTable writes, as kops does, one line per instance group (NAME STATUS NEEDUPDATE READY MIN TARGET
// MAX), then one line per machine that needs an update, with the reason.
func writeRollingTable(out io.Writer, groups []RollingGroup) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATUS\tNEEDUPDATE\tREADY\tMIN\tTARGET\tMAX")
	for _, g := range groups {
		needs, ready := 0, 0
		for _, i := range g.Instances {
			if i.NeedsUpdate {
				needs++
			}
			if i.Ready {
				ready++
			}
		}
		status := "Ready"
		if needs > 0 {
			status = "NeedsUpdate"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", g.Name, status, needs, ready, g.Min, g.Target, g.Max)
	}
	w.Flush()
	var lines []RollingInstance
	for _, g := range groups {
		for _, i := range g.Instances {
			if i.NeedsUpdate {
				lines = append(lines, i)
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "INSTANCE\tGROUP\tZONE\tSTATUS\tREADY\tREASON")
	for _, i := range lines {
		fmt.Fprintf(w, "%s\t%s\t%s\tNeedsUpdate\t%t\t%s\n", i.ID, i.Group, i.Zone, i.Ready, i.Reason)
	}
	w.Flush()
}

// roller replaces machines one at a time.
type roller struct {
	cloud  RollingCloud
	health Health
	igs    []*model.InstanceGroup
	o      RollingOptions
}

func (r *roller) replace(ctx context.Context, i RollingInstance) error {
	log := r.o.Logger.With("instance", i.ID, "group", i.Group)
	if i.ControlPlane {
		if err := r.quorum(ctx, i, log); err != nil {
			return err
		}
	}
	problems, err := r.health.Validate(ctx)
	if err != nil {
		return fmt.Errorf("validating the cluster before replacing %s: %w", i.ID, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("the cluster does not validate (checks based on %s), so %s (%s) is not taken down:\n  %s",
			r.health.Basis(), i.ID, i.Group, strings.Join(problems, "\n  "))
	}
	log.Info("the cluster validates: replacing the machine")
	if err := r.cloud.Replace(ctx, i); err != nil {
		return &takenDownError{asked: true, err: err}
	}
	if err := r.waitReplaced(ctx, i, log); err != nil {
		return &takenDownError{err: err}
	}
	return nil
}

// quorum checks that every etcd cluster keeps a quorum of healthy members without the members i runs.
func (r *roller) quorum(ctx context.Context, i RollingInstance, log *slog.Logger) error {
	members, err := r.health.Etcd(ctx)
	if err != nil {
		return fmt.Errorf("checking etcd's quorum before replacing %s: %w", i.ID, err)
	}
	byCluster := map[string][]MemberHealth{}
	var clusters []string
	for _, m := range members {
		if _, ok := byCluster[m.EtcdCluster]; !ok {
			clusters = append(clusters, m.EtcdCluster)
		}
		byCluster[m.EtcdCluster] = append(byCluster[m.EtcdCluster], m)
	}
	known := len(i.Addresses) > 0
	for _, m := range members {
		known = known || i.holds(m.Holder)
	}
	if !known && len(members) > 0 {
		return fmt.Errorf("%s (%s) is not taken down: the cloud gives no address of it, so which etcd members it runs cannot be told (checks based on %s)",
			i.ID, i.Group, r.health.Basis())
	}
	var problems []string
	for _, ec := range clusters {
		ms := byCluster[ec]
		need := len(ms)/2 + 1
		var without, here, down []string
		for _, m := range ms {
			switch {
			case i.holds(m.Holder):
				here = append(here, m.Member)
			case m.Healthy:
				without = append(without, m.Member)
			default:
				down = append(down, m.Member+" ("+m.Why+")")
			}
		}
		ok := len(without) >= need
		log.Info("etcd quorum check", "etcdCluster", ec, "members", len(ms), "quorum", need,
			"healthyWithout", strings.Join(without, ","), "onThisMachine", strings.Join(here, ","),
			"unhealthy", strings.Join(down, "; "), "ok", ok, "basis", r.health.Basis())
		if !ok {
			problems = append(problems, fmt.Sprintf("etcd-%s: without %s only %d of its %d members would be healthy (%s), below its quorum of %d; unhealthy: %s",
				ec, i.ID, len(without), len(ms), strings.Join(without, ", "), need, strings.Join(down, "; ")))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s (%s) is not taken down: etcd would lose its quorum (checks based on %s):\n  %s",
			i.ID, i.Group, r.health.Basis(), strings.Join(problems, "\n  "))
	}
	return nil
}

// waitReplaced waits until i's group has its target of machines ready, none of them i, and the health checks
// pass: every etcd member healthy and the cluster validating.
func (r *roller) waitReplaced(ctx context.Context, i RollingInstance, log *slog.Logger) error {
	ig := r.igs[slices.IndexFunc(r.igs, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == i.Group })]
	deadline := time.Now().Add(r.o.Timeout)
	var why string
	for {
		done, w, err := r.replaced(ctx, ig, i)
		if err != nil {
			return err
		}
		if done {
			log.Info("the replacement is ready and the cluster healthy")
			return nil
		}
		why = w
		if time.Now().After(deadline) {
			return fmt.Errorf("replacing %s (%s): not done after %s: %s", i.ID, i.Group, r.o.Timeout, why)
		}
		log.Info("waiting for the replacement", "why", why)
		select {
		case <-ctx.Done():
			return fmt.Errorf("replacing %s (%s): %w while waiting: %s", i.ID, i.Group, ctx.Err(), why)
		case <-time.After(r.o.Interval):
		}
	}
}

func (r *roller) replaced(ctx context.Context, ig *model.InstanceGroup, old RollingInstance) (bool, string, error) {
	groups, err := r.cloud.Groups(ctx, []*model.InstanceGroup{ig})
	if err != nil {
		return false, "", err
	}
	if len(groups) != 1 {
		return false, "", errors.New("the cloud lists no group for instance group " + ig.Metadata.Name)
	}
	g := groups[0]
	ready := 0
	for _, i := range g.Instances {
		if i.ID == old.ID && i.UID == old.UID {
			return false, fmt.Sprintf("%s is still in group %s", old.ID, g.Name), nil
		}
		if i.Ready {
			ready++
		}
	}
	if int32(ready) < g.Target {
		return false, fmt.Sprintf("group %s has %d of its %d machines ready", g.Name, ready, g.Target), nil
	}
	members, err := r.health.Etcd(ctx)
	if err != nil {
		return false, "", err
	}
	var down []string
	for _, m := range members {
		if !m.Healthy {
			down = append(down, m.String()+": "+m.Why)
		}
	}
	if len(down) > 0 {
		return false, "etcd members not healthy yet: " + strings.Join(down, "; "), nil
	}
	problems, err := r.health.Validate(ctx)
	if err != nil {
		return false, "", err
	}
	if len(problems) > 0 {
		return false, "the cluster does not validate yet: " + strings.Join(problems, "; "), nil
	}
	return true, "", nil
}

// openRolling returns the rolling-update side of the cluster's cloud; igs are all the cluster's instance groups.
func (cs *Clusters) openRolling(ctx context.Context, c *model.Cluster, igs []*model.InstanceGroup) (RollingCloud, error) {
	p, err := providerFor(c)
	if err != nil {
		return nil, err
	}
	return p.OpenRolling(ctx, cs, c, igs)
}

// rollingHealth returns the checks of a rolling update: the cloud's with o.CloudOnly, else the API's and etcd's.
func (cs *Clusters) rollingHealth(ctx context.Context, c *model.Cluster, igs []*model.InstanceGroup, cloud RollingCloud, o RollingOptions) (Health, error) {
	if o.CloudOnly {
		h, ok := cloud.(Health)
		if !ok {
			return nil, fmt.Errorf("cluster %s: --cloudonly: the %s cloud cannot tell etcd's health", c.Metadata.Name, c.Spec.CloudProvider)
		}
		o.Logger.Warn("health checks are based on the cloud alone (--cloudonly), not on the API or etcd", "basis", h.Basis())
		return h, nil
	}
	return cs.apiHealth(ctx, c, o.Kubeconfig)
}
