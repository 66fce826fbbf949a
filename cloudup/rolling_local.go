package cloudup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// The local provider's machines are directories (and network namespaces) of this host that the operator runs
// nodeup and protokube on: there is no group API to list or replace them. nodeup records each machine of a
// local-provider cluster it converges (nodeup/machine.go) in
//
//	<dir of spec.local.poolDir>/machines/<cluster>/<node id>.json
//
// and a rolling update reads those records: a machine needs an update when the node configuration it was
// converged to is not its group's current one (the sha256 on the first line of <cluster>/nodeup/<group> in the
// state store); replacing it is running its nodeup again with the group's configuration from the store, which
// writes the new /etc/kubeup/node.conf that protokube reads each round (and, where a systemd runs in the
// machine's root, restarts protokube.service), then waiting for protokube's rounds to take it.

// localMachine is a machine record as nodeup writes it (nodeup.LocalMachine: the same fields, by name).
type localMachine struct {
	NodeID        string    `json:"nodeID"`
	Cluster       string    `json:"cluster"`
	InstanceGroup string    `json:"instanceGroup"`
	Role          string    `json:"role"`
	Zone          string    `json:"zone"`
	Root          string    `json:"root"`
	Conf          string    `json:"conf"`
	Nodeup        string    `json:"nodeup"`
	Systemd       bool      `json:"systemd"`
	ConfigSHA256  string    `json:"configSHA256"`
	Converged     time.Time `json:"converged"`

	path string // the record's file
}

// localRolling is the rolling-update side of a local-provider cluster: its recorded machines, converged again
// by nodeup; and, for --cloudonly, the health the pool's claims tell.
type localRolling struct {
	store statestore.Store // the groups' node configurations
	spec  *model.Cluster
	igs   []*model.InstanceGroup // all of the cluster's
	dir   string                 // the cluster's machine records
	pool  *localtasks.Pool
	// poll is how often Replace looks at the claims while waiting for protokube's rounds (default 250ms).
	poll time.Duration
}

var (
	_ RollingCloud = (*localRolling)(nil)
	_ Health       = (*localRolling)(nil)
)

func openLocalRolling(c *model.Cluster, igs []*model.InstanceGroup, store statestore.Store) (*localRolling, error) {
	if c.Spec.Local == nil || c.Spec.Local.PoolDir == "" {
		return nil, fmt.Errorf("cluster %s: spec.local.poolDir is not set: the local provider records its machines beside the pool", c.Metadata.Name)
	}
	poolDir := filepath.FromSlash(c.Spec.Local.PoolDir)
	pool, err := localtasks.NewPool(poolDir)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(filepath.Dir(filepath.Clean(poolDir)), "machines", c.Metadata.Name)
	return &localRolling{store: store, spec: c, igs: igs, dir: dir, pool: pool, poll: 250 * time.Millisecond}, nil
}

// machines reads the cluster's machine records, sorted by node id.
func (l *localRolling) machines() ([]localMachine, error) {
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the local machines of cluster %s: %w", l.spec.Metadata.Name, err)
	}
	var out []localMachine
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue // a temporary file of nodeup's
		}
		p := filepath.Join(l.dir, e.Name())
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir
		}
		if err != nil {
			return nil, fmt.Errorf("reading machine record %s: %w", p, err)
		}
		var m localMachine
		if err := json.Unmarshal(b, &m); err != nil || m.NodeID != id || m.Root == "" || m.InstanceGroup == "" || model.ValidNodeID(m.NodeID) != nil {
			if err == nil {
				err = errors.New("nodeID, root or instanceGroup missing, or nodeID not the file's name")
				if verr := model.ValidNodeID(m.NodeID); m.NodeID == id && verr != nil {
					err = verr // a control character in an id is never printed raw
				}
			}
			return nil, fmt.Errorf("%q is not a machine record written by nodeup (%v): remove it, then run nodeup on that machine again to record it", p, err)
		}
		m.path = p
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b localMachine) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out, nil
}

// currentSHA256 is the sha256 of the group's node configuration in the state store.
func (l *localRolling) currentSHA256(ctx context.Context, group string) (string, error) {
	p := model.NodeConfigPath(l.spec.Metadata.Name, group)
	obj, err := l.store.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("instance group %s has no node configuration %s in the state store: run `kubeup update cluster %s --yes` first",
			group, p, l.spec.Metadata.Name)
	}
	if err != nil {
		return "", err
	}
	return model.NodeConfigObjectSHA256(p, obj)
}

// nodeConfSHA256 is the sha256 on the first line of the machine's /etc/kubeup/node.conf (what its protokube reads);
// "" when it has none.
func nodeConfSHA256(m localMachine) (string, error) {
	p := filepath.Join(m.Root, "etc", "kubeup", "node.conf")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("machine %s: %w", m.NodeID, err)
	}
	return model.NodeConfigObjectSHA256(p, b)
}

// volumes lists the cluster's etcd member volumes with their holders (a claim whose lease ran out holds nothing).
func (l *localRolling) volumes(ctx context.Context) ([]volumetasks.Volume, error) {
	return localtasks.NewVolumes(l.pool, volumetasks.Holder{}, 0).List(ctx, map[string]string{
		model.ClusterTagKey(l.spec.Metadata.Name): model.TagValueOwned,
		model.TagControlPlane:                     "1",
	})
}

// Groups lists the recorded machines of each instance group. A machine needs an update when the configuration
// nodeup converged it to (on the control plane: the one in its /etc/kubeup/node.conf, which protokube runs) is
// not the group's in the state store. It is Ready when its root exists and, on the control plane, its
// node.conf is the configuration nodeup converged it to.
func (l *localRolling) Groups(ctx context.Context, igs []*model.InstanceGroup) ([]RollingGroup, error) {
	ms, err := l.machines()
	if err != nil {
		return nil, err
	}
	vols, err := l.volumes(ctx)
	if err != nil {
		return nil, err
	}
	addrs := map[string][]string{} // node id -> the internal addresses its claims carry
	for _, v := range vols {
		if v.Holder != nil && v.Holder.InternalIP != "" && !slices.Contains(addrs[v.Holder.NodeID], v.Holder.InternalIP) {
			addrs[v.Holder.NodeID] = append(addrs[v.Holder.NodeID], v.Holder.InternalIP)
		}
	}
	out := make([]RollingGroup, 0, len(igs))
	for _, ig := range igs {
		want, err := l.currentSHA256(ctx, ig.Metadata.Name)
		if err != nil {
			return nil, err
		}
		g := RollingGroup{Name: ig.Metadata.Name, ControlPlane: ig.Spec.Role == model.RoleControlPlane}
		if ig.Spec.MinSize != nil {
			g.Min = *ig.Spec.MinSize
		}
		if ig.Spec.MaxSize != nil {
			g.Max = *ig.Spec.MaxSize
		}
		for _, m := range ms {
			if m.InstanceGroup != g.Name {
				continue
			}
			i, err := l.instance(m, g.ControlPlane, want)
			if err != nil {
				return nil, err
			}
			i.Addresses = addrs[m.NodeID]
			g.Instances = append(g.Instances, i)
		}
		g.Target = int32(len(g.Instances))
		out = append(out, g)
	}
	return out, nil
}

// instance is machine m as a rolling update lists it; want is its group's current configuration.
func (l *localRolling) instance(m localMachine, controlPlane bool, want string) (RollingInstance, error) {
	i := RollingInstance{Group: m.InstanceGroup, ControlPlane: controlPlane, ID: m.NodeID, Zone: m.Zone}
	running, where := m.ConfigSHA256, "converged by nodeup at "+m.Converged.Format(time.RFC3339)
	_, err := os.Stat(m.Root)
	rootOK := err == nil
	ready := rootOK
	if controlPlane && rootOK {
		conf, err := nodeConfSHA256(m)
		if err != nil {
			return i, err
		}
		if conf != m.ConfigSHA256 {
			// protokube runs what node.conf says: nodeup's run was undone, or node.conf changed by hand.
			running, where, ready = conf, "in its /etc/kubeup/node.conf, not the "+short(m.ConfigSHA256)+" nodeup converged it to", false
		}
	}
	i.Ready = ready
	// Each convergence is a new incarnation of the machine, up to date or not (--force).
	i.UID = running + "@" + m.Converged.Format(time.RFC3339Nano)
	switch {
	case !rootOK:
		i.NeedsUpdate, i.Reason = true, fmt.Sprintf("its root %s is gone (%s): remove it from %s if the machine is gone for good", m.Root, m.path, l.dir)
	case running != want:
		i.NeedsUpdate, i.Reason = true, fmt.Sprintf("node configuration %s (%s), the group's is %s", short(running), where, short(want))
	}
	return i, nil
}

// short is a sha256 as a reader compares them: its first 12 hex digits.
func short(sum string) string {
	if sum == "" {
		return "(none)"
	}
	return sum[:min(12, len(sum))]
}

// Replace converges the machine again: its nodeup, with its group's configuration from the state store and its
// root. On a control-plane machine, it then waits for two of protokube's rounds (the machine's claims renewed
// twice) and checks that node.conf is still the new configuration (protokube never writes it, but an operator or
// an older protokube may), running nodeup again if not (up to 3 times).
func (l *localRolling) Replace(ctx context.Context, i RollingInstance) error {
	ms, err := l.machines()
	if err != nil {
		return err
	}
	k := slices.IndexFunc(ms, func(m localMachine) bool { return m.NodeID == i.ID })
	if k < 0 {
		return fmt.Errorf("machine %s: its record is gone from %s", i.ID, l.dir)
	}
	m := ms[k]
	want, err := l.currentSHA256(ctx, m.InstanceGroup)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		start := time.Now()
		if err := l.runNodeup(ctx, m); err != nil {
			return err
		}
		if !i.ControlPlane {
			return nil
		}
		if err := l.waitRounds(ctx, m, start); err != nil {
			return err
		}
		got, err := nodeConfSHA256(m)
		if err != nil {
			return err
		}
		if got == want {
			return nil
		}
		if attempt == 3 {
			return fmt.Errorf("machine %s: after 3 runs of nodeup its /etc/kubeup/node.conf is %s, not %s: does protokube on it read another --conf than %s?",
				m.NodeID, short(got), short(want), filepath.Join(m.Root, "etc", "kubeup", "node.conf"))
		}
	}
}

// runNodeup runs the machine's nodeup with its group's configuration in the state store.
func (l *localRolling) runNodeup(ctx context.Context, m localMachine) error {
	conf := strings.TrimSuffix(l.store.URL(), "/") + "/" + model.NodeConfigPath(l.spec.Metadata.Name, m.InstanceGroup)
	if _, err := os.Stat(m.Nodeup); err != nil {
		return fmt.Errorf("machine %s: the nodeup that converged it (%s, in %s): %w", m.NodeID, m.Nodeup, m.path, err)
	}
	cmd := exec.CommandContext(ctx, m.Nodeup, "--conf="+conf, "--root="+m.Root, "--node-id="+m.NodeID)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("machine %s: %s: %w\n%s", m.NodeID, strings.Join(cmd.Args, " "), err, lastLines(out.String(), 20))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// claimRenewal is what waitRounds reads of a claim file (<pool>/<volume>.claim, written by protokube).
type claimRenewal struct {
	NodeID  string    `json:"nodeID"`
	Renewed time.Time `json:"renewed"`
	Lease   string    `json:"lease"`
}

// waitRounds waits until protokube on m has renewed its volume claims in two rounds after since: the second
// began after since, so it read the configuration nodeup wrote. A machine that holds no claim has no round to
// wait for. It waits at most twice the claims' lease (5m when they have none): a claim not renewed by then is
// not held any more.
func (l *localRolling) waitRounds(ctx context.Context, m localMachine, since time.Time) error {
	seen, rounds := since, 0
	var deadline time.Time
	for {
		oldest, limit, held, err := l.renewals(ctx, m.NodeID)
		if err != nil {
			return err
		}
		if !held {
			return nil
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(2 * limit)
		}
		if oldest.After(seen) {
			seen, rounds = oldest, rounds+1
			if rounds == 2 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("machine %s: protokube did not renew its volume claims in two rounds within %s of nodeup's run: is it running?",
				m.NodeID, 2*limit)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("machine %s: waiting for protokube's rounds: %w", m.NodeID, ctx.Err())
		case <-time.After(l.poll):
		}
	}
}

// renewals returns the oldest renewal of node's claims and their longest lease (5m when none has one); held is
// false when node holds none.
func (l *localRolling) renewals(ctx context.Context, node string) (oldest time.Time, lease time.Duration, held bool, err error) {
	vols, err := l.volumes(ctx)
	if err != nil {
		return time.Time{}, 0, false, err
	}
	for _, v := range vols {
		if v.Holder == nil || v.Holder.NodeID != node {
			continue
		}
		p := filepath.Join(l.pool.Dir(), v.ID+".claim")
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released since
		}
		if err != nil {
			return time.Time{}, 0, false, err
		}
		var c claimRenewal
		if err := json.Unmarshal(b, &c); err != nil {
			return time.Time{}, 0, false, fmt.Errorf("%s: %w", p, err)
		}
		if c.NodeID != node {
			continue
		}
		if d, err := time.ParseDuration(c.Lease); err == nil && d > lease {
			lease = d
		}
		if !held || c.Renewed.Before(oldest) {
			oldest = c.Renewed
		}
		held = true
	}
	if lease == 0 {
		lease = 5 * time.Minute
	}
	return oldest, lease, held, nil
}

// Basis says what the local provider's checks are (--cloudonly).
func (l *localRolling) Basis() string {
	return "the local machines (--cloudonly): an etcd member counts as healthy when its volume's claim in the pool is held, unexpired, by a ready machine of the cluster (what protokube renews each round), not by etcd's own /health"
}

// Etcd reports each member of the spec by its volume in the pool: held by the node whose unexpired claim it is,
// healthy when that node is a ready machine of the cluster.
func (l *localRolling) Etcd(ctx context.Context) ([]MemberHealth, error) {
	groups, err := l.Groups(ctx, l.igs)
	if err != nil {
		return nil, err
	}
	return l.members(ctx, ReadyMachines(groups))
}

func (l *localRolling) members(ctx context.Context, live map[string]bool) ([]MemberHealth, error) {
	vols, err := l.volumes(ctx)
	if err != nil {
		return nil, err
	}
	return MembersFromVolumes(l.spec, vols, live, HoldTerms{Volume: "volume", HeldBy: "claimed by",
		HeldByNone: "claimed by no node (or its claim's lease ran out)", NotServing: "is not a ready machine of the cluster",
		NoVolume: "no volume of the pool carries its tag"}), nil
}

// Validate checks, from the machines and the pool, that every recorded machine is ready and every etcd
// member's volume is claimed by one of them.
func (l *localRolling) Validate(ctx context.Context) ([]string, error) {
	groups, err := l.Groups(ctx, l.igs)
	if err != nil {
		return nil, err
	}
	return ValidateFromCloud(ctx, groups, "ready", l.members)
}
