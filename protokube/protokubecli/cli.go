// Package protokubecli is protokube's command line: flag wiring only, the work is done by package protokube. Each
// protokube binary's main calls Main after importing the clouds it links (cmd/protokube links the local
// provider only; cmd/protokube-aws adds providers/aws/awsnode, cmd/protokube-gce providers/gce/gcenode).
package protokubecli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/internal/version"
	"kubeup.dev/kubeup/protokube"
)

// Main runs protokube with the process's arguments, signals and standard streams, and exits with its status.
func Main() {
	tuneRuntime()
	// systemd stops the unit with SIGTERM: protokube ends between rounds. SIGHUP starts a round at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	wake := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case wake <- struct{}{}:
			default: // a round is asked for already
			}
		}
	}()
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr, wake)
	stop()
	os.Exit(code)
}

// Runtime settings of the daemon: protokube stays up on every control-plane node, beside etcd and the API server,
// and runs a round a minute whose live heap is a few MB.
//
//   - One P (GOMAXPROCS=1): a round waits on the cloud, the disks and systemd, and its tasks run concurrently
//     for that waiting, not for computing; on one P the runtime neither wakes nor spins other threads for each
//     goroutine a round starts, which cost a third of an idle round's CPU on two cores (BenchmarkProtokubeIdleRound).
//     A blocking system call still hands the P to another thread, as always.
//   - The default heap growth (GOGC 100): with a live heap of 2-3 MB, half of it (GOGC 50) collected every round
//     at twice the CPU, for 1.5 MB less resident memory.
//   - A soft limit of gcMemoryLimit on the Go memory (heap, stacks, runtime), so that what a large round (the
//     first, a changed configuration) left behind goes back to the system rather than stay resident. A round
//     that needs more gets it, and collects more often meanwhile.
//
// GOMAXPROCS, GOGC and GOMEMLIMIT in the environment win.
const gcMemoryLimit = 32 << 20

func tuneRuntime() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}

// Run runs protokube with args and returns the exit code: 0; after printing "Error: ..." to stderr,
// protokube.ExitNotControlPlane for a node configuration that is not a control-plane node's, else 1.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, wake <-chan struct{}) int {
	cmd := newRootCommand(wake)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		if errors.Is(err, protokube.ErrNotControlPlane) {
			return protokube.ExitNotControlPlane
		}
		return 1
	}
	return 0
}

func newRootCommand(wake <-chan struct{}) *cobra.Command {
	var (
		o          protokube.Options
		verbose    bool
		cpuProfile string
	)
	root := &cobra.Command{
		Use:   "protokube --conf PATH|URL [--once] [--dryrun] [--root DIR] [--interval D]",
		Short: "Keep a control-plane node converged: etcd volumes, manifests, DNS",
		Long: `protokube runs on every control-plane node, in rounds: the first at start, then every --interval, and at
once on SIGHUP. Each round reads the node configuration (the same object, with the same sha256 check, as nodeup),
lists the etcd member volumes of this node's zone by their tags, keeps the one of each etcd cluster this node
holds or claims a free one (attaching is the lock: a volume another node holds is never taken), formats it only
if blank, mounts it under /mnt/master-<volume>, writes etcd's manifest while it is mounted (and removes it when
it is not), publishes the member's DNS name and the API's names, and makes sure kubelet runs. One round is one
engine run; a failed round is logged and the next one tries again. SIGTERM ends protokube between rounds.

On AWS (cloudProvider aws), this node is the EC2 instance the metadata service (IMDSv2) names: its instance id,
private and public addresses and zone; the etcd volumes are EBS volumes of its zone, claimed by attaching them
(EC2 decides a race: a volume attached to another instance is left to it), and the names are published in the
Route53 hosted zone of spec.dnsZone. The SDK's usual settings apply: the instance profile's credentials,
AWS_ENDPOINT_URL, and AWS_EC2_METADATA_SERVICE_ENDPOINT for the metadata service. On the local cloud, volumes
are claimed in the pool, and the names published as spec.local.dns says.

On the local cloud a worker runs protokube too: with a Node group's configuration its round keeps only this
node's routes to the other Nodes' pod ranges, reading the Nodes with kubelet's own credentials.

--dryrun prints a round's report and changes nothing; --once runs one round and exits with its status.

Exit status: 0 once stopped by SIGTERM (or after a good round with --once); ` + strconv.Itoa(protokube.ExitNotControlPlane) + ` when the node configuration is
not a control-plane node's and gives protokube nothing to do (a Node group's on AWS or GCE): it is refused at once, not every round, and protokube.service does
not restart protokube after that status; 1 for any other error (bad flags, or a failed round with --once).`,
		Example: `  protokube --conf=/etc/kubeup/node.conf
  protokube --conf=/etc/kubeup/node.conf --once --dryrun`,
		Args:              cobra.NoArgs,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.Err, o.Wake = cmd.OutOrStdout(), cmd.ErrOrStderr(), wake
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			o.Logger = slog.New(slog.NewTextHandler(o.Err, &slog.HandlerOptions{Level: level}))
			if o.Conf == "" {
				return fmt.Errorf("--conf is required: the node configuration nodeup read (a path, file:///path, s3://bucket/key or gs://bucket/key)")
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			return protokube.Run(cmd.Context(), o)
		},
	}
	f := root.Flags()
	f.StringVar(&o.Conf, "conf", "", "the node configuration, as nodeup's --conf (required)")
	f.StringVar(&o.Root, "root", "/", "the node's filesystem root")
	f.BoolVar(&o.DryRun, "dryrun", false, "print each round's report; change nothing")
	f.BoolVar(&o.Once, "once", false, "run one round and exit with its status")
	f.DurationVar(&o.Interval, "interval", protokube.DefaultInterval, "time between rounds (at least "+protokube.MinInterval.String()+")")
	f.StringVar(&o.Node.NodeID, "node-id", "", "this node's id in the claims of volumes (default: the instance id on AWS, else the host name)")
	f.StringVar(&o.Node.InternalIP, "internal-ip", "", "this node's internal address, published for its etcd members and the internal API name (default: the instance's private address on AWS, else the address of the default route's interface)")
	f.StringVar(&o.Node.ExternalIP, "external-ip", "", "this node's public address, published for the public API name (default: the instance's public address on AWS, else the internal one)")
	f.DurationVar(&o.Lease, "lease", 0, "how long a claim of a local volume holds without being renewed (default 5 × --interval; at least "+protokube.MinLease.String()+", and longer than --interval)")
	f.BoolVarP(&verbose, "verbose", "v", false, "log at debug level")
	f.StringVar(&cpuProfile, "cpuprofile", "", "debugging: write a CPU profile of the process to this file, until it stops (go tool pprof reads it)")
	root.AddCommand(version.Command("protokube"))
	return root
}

// startCPUProfile profiles the process into the file path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
