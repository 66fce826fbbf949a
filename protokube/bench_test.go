//go:build e2e

package protokube

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/model"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// BenchmarkProtokubeIdleRound measures a protokube round with nothing to do, on the AWS provider against the AWS
// fake (internal/fakeaws, in this process; AWS rather than the local provider because it is the provider whose
// API calls matter, and its fake counts them). kubeup makes a cluster of three control-plane instances (one per
// zone) in the fake; each instance's root shows its zone's volumes on loop devices; protokube (the binary) runs
// rounds on the three until they hold, mount and publish everything. Then, on the first instance:
//
//   - the sub-benchmark aws runs b.N rounds in this process (Options.round, as Run does): ns/op, B/op and
//     allocs/op are per round (an upper bound: they include the fake's own work for the round's calls);
//     mutating-calls, list-calls-max-per-type (the most Describe*/List* calls of one operation) and
//     calls-per-round are what the fake counted, per round. Every round must change nothing.
//   - the protokube binary runs rounds every 100 ms: cpu-ms is the user + system time per round of the process
//     and of the children it waited for (blkid: each FormatAndMount probes its device every round), cpu-ms-self
//     of the process alone, cpu-ms-sys its system time (from /proc/PID/stat, over idleRounds rounds after
//     warm-up); rss-mb and hwm-mb are its VmRSS and VmHWM after them, rss-anon-mb and rss-file-mb the two parts
//     of VmRSS (RssAnon: its heap, stacks and runtime; RssFile: the pages of its binary and libraries mapped in),
//     heap-live-mb the most live heap a GC saw meanwhile and gc-per-round the collections per round
//     (GODEBUG=gctrace=1): the cost of the process alone, without the test harness or the fake. With
//     KUBEUP_BENCH_PROTOKUBE_CPUPROFILE=FILE, the process writes its CPU profile there (--cpuprofile).
//
// Needs root and loop devices (mounts): behind the e2e build tag.
func BenchmarkProtokubeIdleRound(b *testing.B) {
	e2e.RequireRoot(b)
	e2e.RequireTools(b, "losetup", "mkfs.ext4", "blkid")
	n := convergedAWSNode(b)

	proc := measureProtokubeProcess(b, n)
	b.Run("aws", func(b *testing.B) {
		for _, kv := range n.env {
			k, v, _ := strings.Cut(kv, "=")
			b.Setenv(k, v)
		}
		rec := &roundRecorder{}
		o := Options{Conf: n.conf, Root: n.root, Logger: slog.New(rec)}
		if err := o.defaults(); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if _, err := o.round(ctx); err != nil { // identifies the instance (IMDS) once, as Run's first round
			b.Fatalf("warm-up round: %v", err)
		}
		n.fake.ResetCalls()
		rec.reset()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			moved, err := o.round(ctx)
			if err != nil || moved {
				b.Fatalf("round %d: moved %v, %v; want an idle round", i, moved, err)
			}
		}
		b.StopTimer()
		if rounds, changed := rec.counts(); rounds != b.N || changed != 0 {
			b.Fatalf("%d rounds logged, %d of them with changes; want %d rounds, none with changes", rounds, changed, b.N)
		}
		mutating, total, maxList := 0, 0, 0
		calls := n.fake.Calls()
		b.Logf("%d idle rounds: calls %v", b.N, calls)
		for op, c := range calls {
			total += c
			if fakeaws.Mutating(op) {
				mutating += c
			}
			if strings.HasPrefix(op, "Describe") || strings.HasPrefix(op, "List") {
				maxList = max(maxList, c)
			}
		}
		per := func(c int) float64 { return float64(c) / float64(b.N) }
		b.ReportMetric(per(mutating), "mutating-calls")
		b.ReportMetric(per(maxList), "list-calls-max-per-type")
		b.ReportMetric(per(total), "calls-per-round")
		b.ReportMetric(proc.cpuMs, "cpu-ms")
		b.ReportMetric(proc.cpuMsSelf, "cpu-ms-self")
		b.ReportMetric(proc.cpuMsSys, "cpu-ms-sys")
		b.ReportMetric(proc.heapMB, "heap-live-mb")
		b.ReportMetric(proc.gcPerRound, "gc-per-round")
		b.ReportMetric(proc.rssMB, "rss-mb")
		b.ReportMetric(proc.rssAnonMB, "rss-anon-mb")
		b.ReportMetric(proc.rssFileMB, "rss-file-mb")
		b.ReportMetric(proc.hwmMB, "hwm-mb")
	})
}

// benchNode is the converged instance the benchmark measures: its node configuration, root and environment, the
// fake it talks to, and the protokube binary.
type benchNode struct {
	conf, root, bin string
	env             []string // what points the SDK at the fake and at this instance's metadata service
	fake            *fakeaws.Server
}

// convergedAWSNode makes a 3-instance cluster in a fresh AWS fake with kubeup, converges the three with protokube
// (--once, until a dry run of each has nothing to do) and returns the first instance.
func convergedAWSNode(tb testing.TB) *benchNode {
	tb.Helper()
	ctx := context.Background()
	const cluster, dnsZone, bucket = "bench.example.com", "example.com", "kubeup-state"
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	bin := e2e.BuildBinaries(tb, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/protokube-aws")
	dir := tb.TempDir()

	s := fakeaws.New()
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	cfg := aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption}, Region: "us-east-1", BaseEndpoint: aws.String(hs.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", "")}
	ec2c := ec2.NewFromConfig(cfg)
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		tb.Fatal(err)
	}
	var subnets []string
	for i, z := range zones {
		sn, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(z), CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/24", i))})
		if err != nil {
			tb.Fatal(err)
		}
		subnets = append(subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	if _, err := route53.NewFromConfig(cfg).CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String(dnsZone), CallerReference: aws.String("bench")}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatal(err)
	}
	if _, err := iam.NewFromConfig(cfg).CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("kubeup")}); err != nil {
		tb.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	env := func(imds string) []string {
		return []string{"AWS_ENDPOINT_URL=" + hs.URL, "AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds,
			"AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=SECRETTEST", "AWS_CONFIG_FILE=" + empty,
			"AWS_SHARED_CREDENTIALS_FILE=" + empty, "AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=",
			"AWS_CA_BUNDLE="} // a machine's CA bundle (parsed into the SDK's clients, kept live) is no node's
	}

	kubeupEnv := append(env(""), "AWS_EC2_METADATA_DISABLED=true", "KUBEUP_STATE_STORE=s3://"+bucket+"/clusters")
	for _, args := range [][]string{
		{"create", "cluster", "--name", cluster, "--cloud", "aws", "--zones", strings.Join(zones, ","), "--control-plane-count", "3", "--node-count", "0",
			"--dns-zone", dnsZone, "--vpc", aws.ToString(vpc.Vpc.VpcId), "--subnets", strings.Join(subnets, ","),
			"--nodeup-url", "https://example.com/nodeup", "--nodeup-sha256", strings.Repeat("ab", 32)},
		{"update", "cluster", cluster, "--yes"},
	} {
		cmd := exec.Command(filepath.Join(bin, "kubeup"), args...)
		cmd.Env = append(os.Environ(), kubeupEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	var nodes []*benchNode
	confFlag := regexp.MustCompile(`(?m)^CONF='(s3://[^']+)'$`)
	for _, i := range s.Instances() {
		m := confFlag.FindStringSubmatch(i.UserData)
		if m == nil {
			tb.Fatalf("instance %s: its user data names no s3:// configuration", i.InstanceID)
		}
		imds := httptest.NewServer(s.IMDSHandler(i.InstanceID))
		tb.Cleanup(imds.Close)
		n := &benchNode{conf: m[1], root: filepath.Join(dir, "root-"+i.InstanceID), bin: filepath.Join(bin, "protokube-aws"), env: env(imds.URL), fake: s}
		if i.Zone == zones[0] {
			nodes = append([]*benchNode{n}, nodes...)
		} else {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) != 3 {
		tb.Fatalf("the Auto Scaling groups run %d instances, want 3", len(nodes))
	}

	// Each etcd volume on a loop device of its own, shown in every root as the volume's NVMe link.
	vols, err := ec2c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + model.ClusterTagKey(cluster)), Values: []string{model.TagValueOwned}}}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(vols.Volumes) != 6 {
		tb.Fatalf("kubeup made %d volumes, want 6", len(vols.Volumes))
	}
	for _, v := range vols.Volumes {
		id := aws.ToString(v.VolumeId)
		dev := e2e.LoopDevice(tb, 64<<20)
		for _, n := range nodes {
			link := filepath.Join(n.root, "dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_"+strings.ReplaceAll(id, "-", ""))
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.Symlink(dev, link); err != nil {
				tb.Fatal(err)
			}
			e2e.Unmount(tb, filepath.Join(n.root, model.EtcdMountPoint(id))) // before the loop device's detach
		}
	}

	// Rounds until every instance's dry run has nothing to do: attach, format and mount, then the manifests and
	// the names.
	converged := false
	for round := 1; round <= 4 && !converged; round++ {
		converged = true
		var wg sync.WaitGroup
		for _, n := range nodes {
			wg.Go(func() {
				if out, err := n.protokube("--once"); err != nil {
					tb.Errorf("round %d on %s: %v\n%s", round, n.root, err, out)
				}
			})
		}
		wg.Wait()
		if tb.Failed() {
			tb.FailNow()
		}
		for _, n := range nodes {
			out, err := n.protokube("--once", "--dryrun")
			converged = converged && err == nil && strings.Contains(out, "No changes")
		}
	}
	if !converged {
		out, _ := nodes[0].protokube("--once", "--dryrun")
		tb.Fatalf("the instances did not converge in 4 rounds; the first one's dry run:\n%s", out)
	}
	return nodes[0]
}

// protokube runs the protokube binary on n with args, and returns its output.
func (n *benchNode) protokube(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, append([]string{"--conf=" + n.conf, "--root=" + n.root}, args...)...)
	cmd.Env = append(os.Environ(), n.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// processCost is what one protokube process costs, doing idle rounds.
type processCost struct {
	cpuMs, cpuMsSelf float64 // user + system CPU time per round, with and without the children it waited for
	cpuMsSys         float64 // system time per round of the process alone
	rssMB, hwmMB     float64 // VmRSS and VmHWM after the rounds
	rssAnonMB        float64 // RssAnon and RssFile after the rounds: VmRSS is their sum (and RssShmem, 0)
	rssFileMB        float64
	heapMB           float64 // the most live heap a GC reported during the rounds
	gcPerRound       float64 // collections per round during the rounds
}

const (
	warmupRounds = 5   // rounds before the CPU time is read: the first identifies the instance
	idleRounds   = 60  // rounds the CPU time is measured over
	clockTicks   = 100 // USER_HZ: the unit of utime and stime in /proc/PID/stat on Linux
)

// measureProtokubeProcess runs the protokube binary on n with --interval=1s (its minimum), and reads its CPU
// time over idleRounds rounds and its memory after them from /proc, and the live heap from the runtime's GC
// trace. Every round it logs must have changed nothing.
func measureProtokubeProcess(tb testing.TB, n *benchNode) processCost {
	tb.Helper()
	args := []string{"--conf=" + n.conf, "--root=" + n.root, "--interval=1s"}
	if p := os.Getenv("KUBEUP_BENCH_PROTOKUBE_CPUPROFILE"); p != "" {
		args = append(args, "--cpuprofile="+p)
	}
	cmd := exec.Command(n.bin, args...)
	cmd.Env = append(append(os.Environ(), n.env...), "GODEBUG=gctrace=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	pid := cmd.Process.Pid
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	tb.Cleanup(stop)
	hung := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() }) // a hung protokube ends the scan below
	defer hung.Stop()

	var cost processCost
	var startAll, startSelf, startSys uint64
	gcs := 0
	gcLine := regexp.MustCompile(`^gc \d+ .* \d+->\d+->(\d+) MB`)
	var log []string
	sc := bufio.NewScanner(stderr)
	rounds := 0
	for rounds < warmupRounds+idleRounds && sc.Scan() {
		line := sc.Text()
		log = append(log, line)
		if m := gcLine.FindStringSubmatch(line); m != nil && rounds >= warmupRounds {
			live, _ := strconv.ParseFloat(m[1], 64)
			cost.heapMB = max(cost.heapMB, live)
			gcs++
		}
		if !strings.Contains(line, "msg=round ") {
			continue
		}
		if !strings.Contains(line, " changes=0 ") || strings.Contains(line, " err=") && !strings.Contains(line, " err=<nil>") {
			tb.Fatalf("protokube's round %d was not idle:\n%s", rounds+1, line)
		}
		rounds++
		switch rounds {
		case warmupRounds:
			startAll, startSelf, startSys = cpuTicks(tb, pid)
		case warmupRounds + idleRounds:
			all, self, sys := cpuTicks(tb, pid)
			perRound := func(ticks uint64) float64 { return float64(ticks) * 1000 / clockTicks / idleRounds }
			cost.cpuMs, cost.cpuMsSelf, cost.cpuMsSys = perRound(all-startAll), perRound(self-startSelf), perRound(sys-startSys)
			cost.rssMB, cost.hwmMB = statusMB(tb, pid, "VmRSS"), statusMB(tb, pid, "VmHWM")
			cost.rssAnonMB, cost.rssFileMB = statusMB(tb, pid, "RssAnon"), statusMB(tb, pid, "RssFile")
			cost.gcPerRound = float64(gcs) / idleRounds
		}
	}
	if rounds < warmupRounds+idleRounds {
		tb.Fatalf("protokube stopped after %d rounds; its log:\n%s", rounds, strings.Join(log, "\n"))
	}
	stop()
	go io.Copy(io.Discard, stderr)
	return cost
}

// cpuTicks is the user + system time of process pid, in clock ticks, with the children it waited for (all:
// /proc/PID/stat fields 14 to 17) and without (self: fields 14 and 15), and its system time alone (field 15).
func cpuTicks(tb testing.TB, pid int) (all, self, sys uint64) {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces: count the fields after its ')'.
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b)[i+1:]) // fields[0] is field 3 (state)
	if len(fields) < 15 {
		tb.Fatalf("/proc/%d/stat: %q: too few fields", pid, b)
	}
	var t [4]uint64 // utime, stime, cutime, cstime
	for i := range t {
		v, err := strconv.ParseUint(fields[11+i], 10, 64)
		if err != nil {
			tb.Fatalf("/proc/%d/stat: field %d %q: %v", pid, 14+i, fields[11+i], err)
		}
		t[i] = v
	}
	return t[0] + t[1] + t[2] + t[3], t[0] + t[1], t[1]
}

// statusMB is the field key ("VmRSS", "VmHWM", in kB) of /proc/PID/status, in MB.
func statusMB(tb testing.TB, pid int, key string) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				tb.Fatalf("/proc/%d/status: %s: %v", pid, line, err)
			}
			return kb / 1024
		}
	}
	tb.Fatalf("/proc/%d/status has no %s", pid, key)
	return 0
}

// roundRecorder is a slog.Handler that counts the rounds protokube logs ("round") and those with changes.
type roundRecorder struct {
	mu              sync.Mutex
	rounds, changed int
}

func (h *roundRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *roundRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *roundRecorder) WithGroup(string) slog.Handler            { return h }

func (h *roundRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "round" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rounds++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "changes" && a.Value.Int64() != 0 {
			h.changed++
		}
		return true
	})
	return nil
}

func (h *roundRecorder) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rounds, h.changed = 0, 0
}

func (h *roundRecorder) counts() (rounds, changed int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rounds, h.changed
}
