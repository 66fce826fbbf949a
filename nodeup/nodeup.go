package nodeup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// Options are nodeup's flags and where it writes.
type Options struct {
	// Conf is the node configuration: a path, file:///abs/path, s3://bucket/key or gs://bucket/key. It carries
	// its sha256 on its first line (model.NodeConfig.Encode).
	Conf string
	// ConfSHA256, when set, is the sha256 (hex) the configuration must state on its first line: the one this
	// machine was launched for (its user data names it). Another configuration is refused, changing nothing:
	// the machine's launch template is older than the configuration in the store. The pin is for this run, the
	// machine's first boot: the unit InstallSystemdUnit installs does not carry it, so that a later boot
	// converges the machine to the configuration in the store, as every other.
	ConfSHA256 string
	// Root is the node's filesystem root ("/" when empty). A root that does not exist is created by an apply; a
	// dry run plans as for an empty tree.
	Root string
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// Retries is how many more times a failed run is tried, with backoff (-1: until it succeeds or ctx ends).
	// A bad configuration (*ConfigError) and an invalid task graph are never retried, nor a run whose every
	// failed task failed with an error its task marked engine.Terminal: what only a person can fix (a directory
	// where a file belongs, a path escaping the root, a device refused for formatting).
	Retries int
	// InstallSystemdUnit also installs nodeup itself as a oneshot unit that runs it with Conf at every boot.
	InstallSystemdUnit bool

	// Out receives the results: the plan of a dry run, the changes an apply made. Err receives the one-line
	// notes and, unless Logger is set, the logs.
	Out, Err io.Writer
	// Logger receives the structured logs (default: text to Err).
	Logger *slog.Logger

	// RetryBackoff is the delay before the first retry (default 5s); it doubles each time, up to a minute.
	RetryBackoff time.Duration
	// ConfigWait is how long a configuration whose content does not match its sha256 (a copy still being
	// written, a truncated one) is read again, whatever Retries says, before it is refused (default 2m).
	// ConfigPollInterval is the delay between those reads (default 2s).
	ConfigWait, ConfigPollInterval time.Duration
	// Executable is the nodeup binary --install-systemd-unit installs (default: the running one).
	Executable string
	// Node adjusts the Node world (how systemd is reached).
	Node nodetasks.NodeOptions
	// NodeID is this machine's id, as protokube's --node-id (default: the host name). On the local provider
	// nodeup records the machine under it for `kubeup rolling-update` (LocalMachine).
	NodeID string
}

const maxRetryBackoff = time.Minute

// DefaultConfigWait is how long nodeup waits for a node configuration that does not match its sha256 to become
// complete: long enough for a copy in progress, short enough that a damaged one fails the boot visibly.
const DefaultConfigWait = 2 * time.Minute

// Run loads the node configuration, verifies its sha256 and validates it, builds the node's task graph and converges the node
// under Root with the engine, or with DryRun prints what it would change. A bad configuration is a *ConfigError
// returned before anything under Root is touched.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	src, err := parseConf(o.Conf)
	if err != nil {
		return err
	}
	if err := o.checkConfSHA256(); err != nil {
		return err
	}
	if err := o.checkNodeID(); err != nil {
		return err
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return &ConfigError{Err: fmt.Errorf("--root %q: %w", o.Root, err)}
	}
	var self *selfInstall
	if o.InstallSystemdUnit {
		if self, err = o.selfInstall(src, root); err != nil {
			return err
		}
	}
	backoff := o.RetryBackoff
	for attempt := 0; ; attempt++ {
		err := o.runOnce(ctx, src, root, self)
		if err == nil || !retryable(err) || (o.Retries >= 0 && attempt >= o.Retries) || ctx.Err() != nil {
			return err
		}
		if personOnly(err) {
			return fmt.Errorf("%w\nnot retried (--retries %d): each of these failures is one its task marks terminal, which only a person can fix; "+
				"fix them, then run nodeup again", err, o.Retries)
		}
		o.Logger.Warn("nodeup failed; retrying", "attempt", attempt+1, "retries", o.Retries, "delay", backoff, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (retries stopped: %w)", err, context.Cause(ctx))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, max(maxRetryBackoff, o.RetryBackoff))
	}
}

func (o *Options) defaults() {
	if o.Root == "" {
		o.Root = "/"
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
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 5 * time.Second
	}
	if o.ConfigWait <= 0 {
		o.ConfigWait = DefaultConfigWait
	}
	if o.ConfigPollInterval <= 0 {
		o.ConfigPollInterval = 2 * time.Second
	}
}

// retryable says whether another run might succeed: not after a bad configuration, an invalid graph or a
// cancellation.
func retryable(err error) bool {
	var ce *ConfigError
	var ve *engine.ValidationError
	return !errors.As(err, &ce) && !errors.As(err, &ve) && !errors.Is(err, context.Canceled)
}

// personOnly says that every task that failed in the run err ended failed with an error its task marked
// engine.Terminal: what only a person can fix, which another run would meet again. An unclassified error, a
// retryable or not-ready one (the engine gave up on it within the run: D-Bus not up yet, a download that kept
// failing) and any failure outside the task graph (the store unreachable, systemd not up) may pass: those are
// retried.
func personOnly(err error) bool {
	var re *engine.RunError
	if !errors.As(err, &re) || len(re.Failed) == 0 {
		return false
	}
	for _, te := range re.Failed {
		var ce *engine.ClassError
		if !errors.As(te.Err, &ce) || ce.Class != engine.ClassTerminal {
			return false
		}
	}
	return true
}

// selfInstall is what --install-systemd-unit installs: this binary, and the unit that runs it with the
// configuration conf.
type selfInstall struct {
	executable, sha256, conf, unit string
}

func (o *Options) selfInstall(src *confSource, root string) (*selfInstall, error) {
	conf, err := src.nodePath(root)
	if err != nil {
		return nil, err
	}
	exe := o.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("--install-systemd-unit: finding the nodeup binary: %w", err)
		}
	}
	sum, err := fileSHA256(exe)
	if err != nil {
		return nil, fmt.Errorf("--install-systemd-unit: reading the nodeup binary: %w", err)
	}
	// A conf no unit can hold (see model.ExecLine) is refused before any run: nothing was changed.
	unit, err := selfUnitDefinition(conf, o.Retries, o.NodeID)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	return &selfInstall{executable: exe, sha256: sum, conf: conf, unit: unit}, nil
}

// runOnce is one attempt: load, build, converge.
func (o *Options) runOnce(ctx context.Context, src *confSource, root string, self *selfInstall) error {
	nc, err := src.load(ctx, o)
	if err != nil {
		return err
	}
	g, err := nodegraph.BuildNodeGraph(nc)
	if err != nil {
		return &ConfigError{Err: fmt.Errorf("%s: %w", src.name, err)}
	}
	if self != nil {
		addSelfUnit(g, self)
	}
	rec, err := addRemovals(g, root, o.Logger)
	if err != nil {
		return err
	}
	if err := checkOwned(src.name, g); err != nil {
		return err
	}
	if err := checkCgroupDriver(src.name, nc, root); err != nil {
		return err
	}

	st, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist) && o.DryRun:
		// Plan against an empty tree: everything would be created.
		empty, err := os.MkdirTemp("", "nodeup-dryrun-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(empty)
		fmt.Fprintf(o.Err, "nodeup: %s does not exist yet: planning as for an empty tree, without systemd\n", root)
		return o.converge(ctx, g, empty, nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone}, nc, src.last)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("creating the node root: %w", err)
		}
	case err != nil:
		return fmt.Errorf("node root: %w", err)
	case !st.IsDir():
		return &ConfigError{Err: fmt.Errorf("--root %s is not a directory", root)}
	}
	if !o.DryRun {
		if err := rec.recordAhead(ctx, root, o.Logger); err != nil {
			return err
		}
	}
	return o.converge(ctx, g, root, o.Node, nc, src.last)
}

// converge runs g against the node at root: a dry run that prints the plan, or an apply that prints what it
// changed and, on the local provider, records the machine (conf is the configuration object read).
func (o *Options) converge(ctx context.Context, g *engine.Graph[*nodetasks.Node], root string, nopts nodetasks.NodeOptions, nc *model.NodeConfig, conf []byte) error {
	if nopts.Open == nil {
		nopts.Open = new(assetStores).open
	}
	node, err := nodetasks.NewNode(ctx, root, nopts)
	if err != nil {
		return err
	}
	defer node.Close()
	if node.Systemd == nil && nopts.Systemd != nodetasks.SystemdNone {
		fmt.Fprintf(o.Err, "nodeup: no systemd runs in %s: managing unit files only (services are not started, stopped or restarted)\n", root)
	}
	log := o.Logger.With("instanceGroup", nc.InstanceGroup.Metadata.Name, "cluster", nc.Cluster.Metadata.Name)
	if o.DryRun {
		res, err := engine.Run(ctx, g, node, engine.Options{Target: engine.DryRun, Logger: log})
		if res != nil { // with failures too: what could be planned, then the failures
			err = errors.Join(err, writePlan(o.Out, res.Plan))
		}
		return err
	}
	log.Info("converging the node", "root", root, "tasks", g.Len())
	res, err := engine.Run(ctx, g, node, engine.Options{Target: engine.Apply, Logger: log})
	if res != nil {
		if werr := writeApplied(o.Out, res.Plan, err == nil); werr != nil && err == nil {
			err = werr
		}
	}
	if record := recordMachine[nc.Cluster.Spec.CloudProvider]; err == nil && record != nil {
		if rerr := record(o, nc, conf, root, node.Systemd != nil); rerr != nil {
			log.Warn("the machine is converged but not recorded: kubeup rolling-update will not know it", "err", rerr)
		}
	}
	return err
}

// writePlan prints the dry run's report, whose last line says how to apply it: nodeup applies without --dryrun.
func writePlan(w io.Writer, p *engine.Plan) error {
	return writePlanWithRemovals(w, p, "Run nodeup without --dryrun to apply these changes")
}

// writeApplied prints the changes an apply made: one line per object.
func writeApplied(w io.Writer, p *engine.Plan, ok bool) error {
	var b strings.Builder
	switch {
	case p.Empty() && ok:
		b.WriteString("No changes were needed\n")
	case p.Empty():
	default:
		fmt.Fprintf(&b, "Applied %d change(s):\n", len(p.Changes))
		for _, c := range p.Changes {
			if isRemoval(c.Key) {
				b.WriteString("  deleted  " + c.Key.String() + "\n")
				continue
			}
			if c.Action != engine.Modify {
				b.WriteString("  created  " + c.Key.String() + "\n")
				continue
			}
			names := make([]string, len(c.Fields))
			for i, f := range c.Fields {
				names[i] = f.Name
			}
			b.WriteString("  modified " + c.Key.String() + ": " + strings.Join(names, ", ") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
