package protokube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/protokube/nodecloud"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// Options are protokube's flags and where it writes.
type Options struct {
	// Conf is the node configuration, as nodeup's --conf: protokube reads it with the same checks.
	Conf string
	// Root is the node's filesystem root ("/" when empty); it must exist.
	Root string
	// DryRun prints each round's report and changes nothing; Once runs one round and returns its error.
	DryRun, Once bool
	// Interval is the time between rounds (default DefaultInterval). Wake starts a round at once (SIGHUP).
	Interval time.Duration
	Wake     <-chan struct{}
	// Node is this node as its claims record it: its id and its addresses. What is empty is the cloud's to say,
	// on the first round: on AWS and GCE, the instance's id and private and public addresses (IMDS, the metadata server); elsewhere, the host
	// name, the address of the interface of the default route, and no external address.
	Node volumetasks.Holder
	// Lease is how long a claim of a local volume holds without this node renewing it (default 5 × Interval).
	Lease time.Duration
	// NodeOptions adjust the node world (how systemd is reached).
	NodeOptions nodetasks.NodeOptions
	// Proof checks the machine of a kubelet's bootstrap request (a cloud's signed instance identity); nil: none,
	// the shared bootstrap token alone (docs/pki.md).
	Proof kubetasks.IdentityProof
	// Providers returns the round's volumes and DNS; nil: those of the configuration's cloud.
	Providers func(nc *model.NodeConfig, root string, me volumetasks.Holder, lease time.Duration) (volumetasks.Provider, dnstasks.Provider, error)

	// cloud is this instance on AWS or GCE, once a round found the configuration's cloud is one of them: kept
	// across rounds.
	cloud nodecloud.Instance
	// identified says that Node was completed with what the cloud says; flags is Node as the flags gave it.
	identified bool
	flags      *volumetasks.Holder
	// conf reads Conf each round; it keeps the state store's client and what it decoded across rounds.
	conf *nodeup.ConfigReader
	// nodeLock is the local pool's lock of this node's id (localtasks.Pool.LockNode), held from the first round
	// on the local provider until Run returns; nodeLockOf is the pool and id it locks.
	nodeLock   *os.File
	nodeLockOf string
	// routeTable is a test's routing table, in place of the node's (netlink) in the node round.
	routeTable nodetasks.RouteTable
	// stop is Run's context: it ends on SIGTERM. A round runs to its end whatever it says, but the wait for a
	// valid node configuration at its start does not (it can last minutes and changes nothing).
	stop context.Context

	// Out receives the report of a dry run; Logger the logs, one line per round (default: text to Err).
	Out, Err io.Writer
	Logger   *slog.Logger
}

// ErrNotControlPlane is matched by the error of a round whose node configuration is not a control-plane node's
// (a Node group's) and gives protokube nothing to do (a worker on AWS or GCE, whose pod ranges the cloud routes:
// model.NodeRunsProtokube): Run returns it at once, even without Once, rather than refuse it every round; cmd/protokube
// exits with ExitNotControlPlane.
var ErrNotControlPlane = errors.New("protokube runs on control-plane nodes only")

// ExitNotControlPlane is the status protokube exits with after ErrNotControlPlane; protokube.service does not
// restart it after that status (RestartPreventExitStatus): it would only be refused again.
const ExitNotControlPlane = model.ProtokubeExitNotControlPlane

// DefaultInterval is the time between two rounds.
const DefaultInterval = time.Minute

// MinInterval is the shortest --interval protokube takes, and MinLease the shortest --lease (the default lease,
// 5 × --interval, at the minimum interval): a round is not instant (it reads the node configuration, lists the
// cloud's volumes, checks DNS; a first one attaches and formats), and a lease of nanoseconds expired before its
// round ended.
const (
	MinInterval = time.Second
	MinLease    = 5 * MinInterval
)

// roundTimeout bounds one round: a round that hangs (a DNS server that never answers) must not stop the next.
const roundTimeout = 10 * time.Minute

// quickRounds is how many rounds follow at once a round that attached, detached or mounted a volume: the next
// one writes the etcd manifest for what it mounted, or claims a volume after letting a lost one go, without
// waiting an interval.
const quickRounds = 3

func (o *Options) defaults() error {
	if o.Root == "" {
		o.Root = "/"
	}
	switch {
	case o.Interval < 0:
		return fmt.Errorf("--interval %s: want a positive time between rounds (default %s)", o.Interval, DefaultInterval)
	case o.Interval == 0:
		o.Interval = DefaultInterval
	case o.Interval < MinInterval:
		return fmt.Errorf("--interval %s is shorter than the minimum, %s: a round reads the node configuration, lists the cloud's volumes and checks DNS, "+
			"and rounds closer than that only load the cloud's API and the state store; give --interval %s or more (default %s)", o.Interval, MinInterval, MinInterval, DefaultInterval)
	}
	switch {
	case o.Lease < 0:
		return fmt.Errorf("--lease %s: want a positive duration (default 5 × --interval)", o.Lease)
	case o.Lease == 0:
		o.Lease = 5 * o.Interval
	case o.Lease <= o.Interval:
		return fmt.Errorf("--lease %s is not longer than --interval %s: this node's claims would expire between its rounds and other nodes take its volumes over; "+
			"give a lease of several intervals (default 5 × --interval)", o.Lease, o.Interval)
	case o.Lease < MinLease:
		return fmt.Errorf("--lease %s is shorter than the minimum, %s: a claim must outlast a round (an attach, a format) and the wait for the next one, "+
			"or other nodes take this node's volumes over; give --lease %s or more (default 5 × --interval)", o.Lease, MinLease, MinLease)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(o.Err, nil))
	}
	if err := checkAddresses(&o.Node); err != nil {
		return err
	}
	if o.Node.NodeID != "" { // as nodeup's --node-id: the name in claims, which kubeup prints
		if err := model.ValidNodeID(o.Node.NodeID); err != nil {
			return fmt.Errorf("--node-id: %w", err)
		}
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return fmt.Errorf("--root %q: %w", o.Root, err)
	}
	o.Root = root
	return nil
}

// Run runs rounds until ctx ends: the first at once, then every Interval, at once on Wake, and at once again
// (up to quickRounds times) after a round that attached, detached or mounted a volume. A failed round is
// logged, and the next one tries again; it never ends the process. ctx ending (SIGTERM) lets the round that runs finish (but
// stops its wait for a valid node configuration), then Run returns nil. With Once, Run runs one round and returns its error.
// A node configuration that is not a control-plane node's ends Run at once, with an error that matches
// ErrNotControlPlane.
func Run(ctx context.Context, o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	defer o.unlockNode()
	o.stop = ctx
	quick := 0
	for {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), roundTimeout)
		moved, err := o.round(rctx)
		cancel()
		if o.Once || errors.Is(err, ErrNotControlPlane) {
			return err // another role's configuration is refused once, not every round: no round would do better
		}
		if err != nil {
			o.Logger.Error("round failed; the next round tries again", "err", err, "next", o.Interval)
		}
		if moved && quick < quickRounds && ctx.Err() == nil {
			quick++
			continue
		}
		quick = 0
		select {
		case <-ctx.Done():
			o.Logger.Info("stopping between rounds", "reason", context.Cause(ctx))
			return nil
		case <-o.Wake:
		case <-time.After(o.Interval):
		}
	}
}

// round runs one round: read the node configuration, find the etcd member volumes of this node's zone, decide
// which this node holds, and converge the node, the volumes and DNS in one engine run. moved says that it
// attached or mounted a volume.
func (o *Options) round(ctx context.Context) (moved bool, err error) {
	start := time.Now()
	if o.conf == nil {
		if o.conf, err = nodeup.NewConfigReader(o.Conf, nodeup.Options{Err: o.Err, Logger: o.Logger}); err != nil {
			return false, err
		}
	}
	loadCtx := ctx
	if o.stop != nil {
		var cancel context.CancelFunc
		loadCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(o.stop, cancel)()
	}
	nc, err := o.conf.Load(loadCtx)
	if err != nil {
		return false, err
	}
	if nc.Protokube == nil && nc.Cluster != nil && nc.InstanceGroup != nil && model.NodeRunsProtokube(&nc.Cluster.Spec, nc.InstanceGroup.Spec.Role) {
		return false, o.nodeRound(ctx, nc, start) // a worker's: its routes to the other Nodes' pod ranges
	}
	if nc.Protokube == nil {
		role := "another role"
		if nc.InstanceGroup != nil {
			role = fmt.Sprintf("instance group %q, role %s", nc.InstanceGroup.Metadata.Name, nc.InstanceGroup.Spec.Role)
		}
		return false, fmt.Errorf("node configuration %s is of %s, not a control-plane node's (it has no protokube section): %w; "+
			"point --conf at this control-plane node's configuration (<state store>/<cluster>/nodeup/<control-plane group>), or do not run protokube on this machine", o.Conf, role, ErrNotControlPlane)
	}
	pc := nc.Protokube
	if err := o.identify(ctx, pc); err != nil {
		return false, err
	}
	providers := o.Providers
	if providers == nil {
		providers = o.cloudProviders
	}
	vols, dns, err := providers(nc, o.Root, o.Node, o.Lease)
	if err != nil {
		return false, err
	}
	// The node's mounts journal their formats on the volumes, and confirm the hold before they mount, through the
	// provider's own records.
	nodeOpts := o.NodeOptions
	nodeOpts.FormatJournal, _ = vols.(nodetasks.FormatJournal)
	nodeOpts.MountGuard, _ = vols.(nodetasks.MountGuard)
	node, err := nodetasks.NewNode(ctx, o.Root, nodeOpts)
	if err != nil {
		return false, err
	}
	defer node.Close()
	r := &Round{node: node, volumes: vols, dns: dns}
	// The routes to the other nodes' pod ranges are the network namespace protokube runs in: the node's when its
	// root is "/". A node converged through a root directory has a namespace this process is not in: no routes. On a
	// cloud that routes the pod ranges itself (nodecloud.Router), the node's table has none.
	router, _ := o.cloud.(nodecloud.Router)
	if (o.Root == "" || o.Root == "/") && router == nil {
		table, err := nodetasks.NewNetlinkRoutes("")
		if err != nil {
			return false, err
		}
		defer table.Close()
		r.routes = table
	}

	found, err := vols.List(ctx, map[string]string{pc.ClusterTag.Key: pc.ClusterTag.Value, model.TagControlPlane: "1"})
	if err != nil {
		return false, fmt.Errorf("listing the etcd volumes: %w", err)
	}
	ch := choose(pc, o.Node.NodeID, found)
	for _, p := range ch.problems {
		o.Logger.Warn(p)
	}
	if renewer, ok := vols.(volumetasks.Renewer); ok && !o.DryRun {
		var held []string
		for _, mv := range ch.all {
			if h := mv.volume.Holder; h != nil && h.NodeID == o.Node.NodeID {
				held = append(held, mv.volume.ID)
			}
		}
		if len(held) > 0 {
			if err := renewer.Renew(ctx, held); err != nil {
				return false, fmt.Errorf("renewing the claims of %v: %w", held, err)
			}
		}
	}
	api := apiReady(ctx, o.Root, nc)
	g, err := buildGraph(ctx, r, nc, o.Node, ch, api, o.Logger)
	if err != nil {
		return false, err
	}
	// While this node's kube-apiserver is ready, the round keeps kubeup's objects for kubelets' credentials in
	// the cluster and decides kubelets' certificate requests (nodegraph.AddKubeObjects, docs/pki.md).
	if api == nil {
		if r.kube, r.approver, err = kubeClients(o.Root, nc); err != nil {
			o.Logger.Warn("kubelet credentials: kubeup's objects and the CSR approver wait for this node's files", "err", err)
		} else {
			if err := nodegraph.AddKubeObjects(g, nc, o.Proof); err != nil {
				return false, err
			}
			addPodRoutes(ctx, g, r, nc, self{IP: o.Node.InternalIP}, router, o.Logger)
		}
	}
	if err := checkOwned(o.Conf, g, r.cloudTasks); err != nil {
		return false, err
	}
	target := engine.Apply
	if o.DryRun {
		target = engine.DryRun
	}
	res, runErr := engine.Run(ctx, g, r, engine.Options{Target: target, Logger: o.Logger})
	var changes []engine.Change
	if res != nil && res.Plan != nil {
		changes = res.Plan.Changes
	}
	if o.DryRun && res != nil { // with failures too: what could be planned, then the failures
		if err := res.Plan.WriteTextApplying(o.Out, "Run protokube without --dryrun to apply these changes (it does, every round)"); err != nil {
			return false, err
		}
	}
	var volumes []string
	for _, name := range slices.Sorted(maps.Keys(ch.mine)) {
		volumes = append(volumes, ch.mine[name].volume.ID)
	}
	moved = movedVolumes(changes)
	o.Logger.Info("round", "volumes", volumes, "apiserver", apiState(api), "changes", len(changes), "dryRun", o.DryRun, "duration", time.Since(start).Round(time.Millisecond), "err", runErr)
	return moved && !o.DryRun, runErr
}

// identify completes o.Node with what the configuration's cloud says of this node, once: on AWS and GCE, the instance's
// identity (IMDS, the metadata server); elsewhere, the host name and the address of the default route. The flags win.
func (o *Options) identify(ctx context.Context, pc *model.ProtokubeConfig) error {
	if o.flags == nil {
		flags := o.Node
		o.flags = &flags
	}
	if p, _ := nodeProviderOf(pc.CloudProvider); o.cloud == nil && p.openInstance != nil {
		c, err := p.openInstance(ctx)
		if err != nil {
			return err
		}
		o.cloud = c
		o.identified = false // the instance's identity fills what the flags left empty
	}
	if o.identified {
		return nil
	}
	o.Node = *o.flags
	if o.cloud != nil {
		me := o.cloud.Identity()
		o.Node.NodeID = cmp.Or(o.Node.NodeID, me.NodeID)
		o.Node.InternalIP = cmp.Or(o.Node.InternalIP, me.InternalIP)
		o.Node.ExternalIP = cmp.Or(o.Node.ExternalIP, me.ExternalIP)
	}
	if o.Node.NodeID == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--node-id is required: the host name cannot be read: %w", err)
		}
		o.Node.NodeID = host
	}
	if o.Node.InternalIP == "" {
		ip, err := defaultRouteAddress()
		if err != nil {
			return fmt.Errorf("--internal-ip is required: %w", err)
		}
		o.Node.InternalIP = ip
	}
	if err := checkAddresses(&o.Node); err != nil {
		return err
	}
	o.identified = true
	o.Logger.Info("this node", "node", o.Node.String(), "cloud", pc.CloudProvider)
	return nil
}

// checkAddresses refuses addresses that are not IPv4 (the records protokube publishes are A records), and writes
// an IPv4-mapped IPv6 address (::ffff:10.0.0.1) as the IPv4 address it is: the claims carry it to every node.
func checkAddresses(me *volumetasks.Holder) error {
	var ok bool
	if me.InternalIP, ok = ipv4(me.InternalIP); !ok {
		return fmt.Errorf("--internal-ip %q: want this node's IPv4 address (its records are A records)", me.InternalIP)
	}
	if me.ExternalIP, ok = ipv4(me.ExternalIP); !ok {
		return fmt.Errorf("--external-ip %q: want this node's public IPv4 address, or none", me.ExternalIP)
	}
	return nil
}

// ipv4 returns s as an IPv4 address in its usual form ("" stays ""); false, with s, when it is not one.
func ipv4(s string) (string, bool) {
	if s == "" {
		return "", true
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Unmap().Is4() {
		return s, false
	}
	return a.Unmap().String(), true
}

// cloudProviders returns the volumes and DNS of the configuration's cloud.
func (o *Options) cloudProviders(nc *model.NodeConfig, root string, me volumetasks.Holder, lease time.Duration) (volumetasks.Provider, dnstasks.Provider, error) {
	p, ok := nodeProviderOf(nc.Protokube.CloudProvider)
	if !ok {
		return nil, nil, notLinked(nc.Protokube.CloudProvider, nodeProviderNames())
	}
	return p.providers(o, nc, root, me, lease)
}

// notLinked is the error of a configuration of cloud, which this protokube (which has the clouds has) does not
// link: it names the build that does, where there is one.
func notLinked(cloud, has string) error {
	err := fmt.Errorf("protokube: spec.cloudProvider %s is not a cloud this protokube has (it has %s)", model.Echo(cloud), has)
	if build := model.NodeBinary(cloud, "protokube"); build != "protokube" {
		err = fmt.Errorf("%w: run %s, the build for %s", err, build, cloud)
	}
	return err
}

// lockNode takes, once, the pool's lock of this node's id: no two protokubes run as one node of a pool (two
// nodes that share a host name, the default id, would both take the same volumes as theirs).
func (o *Options) lockNode(pool *localtasks.Pool, dir, id string) error {
	of := dir + "\x00" + id
	if o.nodeLock != nil && o.nodeLockOf == of {
		return nil
	}
	o.unlockNode()
	f, err := pool.LockNode(id)
	if err != nil {
		return err
	}
	o.nodeLock, o.nodeLockOf = f, of
	return nil
}

func (o *Options) unlockNode() {
	if o.nodeLock != nil {
		o.nodeLock.Close()
		o.nodeLock, o.nodeLockOf = nil, ""
	}
}

// localDNS is the DNS provider the local cloud's spec names. Its files are the node's, under root.
func localDNS(pc *model.ProtokubeConfig, root string) (dnstasks.Provider, error) {
	d := pc.Local.DNS
	if d == nil {
		d = &model.LocalDNSSpec{Provider: model.LocalDNSZoneFile}
	}
	switch d.Provider {
	case "", model.LocalDNSZoneFile:
		return localtasks.NewZoneFile(pc.Local.ZoneFile, pc.DNSZone)
	case model.LocalDNSHosts:
		if err := ownedHostsFile("the node configuration", d.HostsFile); err != nil {
			return nil, err
		}
		return localtasks.NewHostsFile(filepath.Join(root, d.HostsFile), pc.DNSZone)
	case model.LocalDNSRFC2136:
		secret, err := os.ReadFile(filepath.Join(root, d.TSIGSecretFile))
		if err != nil {
			return nil, fmt.Errorf("spec.local.dns.tsigSecretFile: reading the TSIG secret of key %s: %w", d.TSIGKeyName, err)
		}
		return localtasks.NewRFC2136(d.Server, pc.DNSZone, d.TSIGKeyName, d.TSIGAlgorithm, strings.TrimSpace(string(secret)))
	}
	return nil, fmt.Errorf("spec.local.dns.provider %q: want %s, %s or %s", d.Provider, model.LocalDNSZoneFile, model.LocalDNSHosts, model.LocalDNSRFC2136)
}

// defaultRouteAddress is the local address this machine would use to reach the outside: the address of the
// interface of its default route. Nothing is sent.
func defaultRouteAddress() (string, error) {
	c, err := net.Dial("udp", "192.0.2.1:9")
	if err != nil {
		return "", fmt.Errorf("this machine has no default route to tell its address by (%w): name it", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// movedVolumes reports whether a round's changes attached, detached or mounted a volume: the next round then
// follows at once (quickRounds), to finish what the move started (format, the manifest, DNS) or, after a lost
// race's volume was let go, to claim another.
func movedVolumes(changes []engine.Change) bool {
	for _, c := range changes {
		switch c.Key.Type {
		case volumetasks.AttachKeyType, volumetasks.DetachKeyType, "FormatAndMount":
			return true
		}
	}
	return false
}
