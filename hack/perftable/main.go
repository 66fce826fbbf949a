// Command perftable turns the output of `make bench` (`go test -bench -benchmem` of several packages,
// concatenated) into docs/performance.md: how to regenerate it, the machine, and one table whose rows set
// kubeup's figures beside their goals and their anchors (kops' and Terraform's figures, measured here or
// documented, with their sources). A benchmark missing from the input leaves its row "not measured".
//
//	go run ./hack/perftable -o docs/performance.md <bench.out   # writes the page, prints the table
//	go run ./hack/perftable <bench.out >page.md                  # the page on stdout, the table on stderr
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"kubeup.dev/kubeup/internal/atomicfile"
)

func main() {
	out := flag.String("o", "", "write the page to this file and print the table on stdout (default: the page on stdout, the table on stderr)")
	flag.Parse()
	if err := run(os.Stdin, *out, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "perftable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out string, stdout, stderr io.Writer) error {
	rs, err := parse(in)
	if err != nil {
		return err
	}
	if len(rs.order) == 0 {
		return fmt.Errorf("no benchmark results on stdin: pipe `go test -run '^$' -bench . -benchmem` output into it (make bench)")
	}
	m := readMachine(rs)
	table := renderTable(rs)
	page := renderPage(m, table, rs)
	if out == "" {
		if _, err := io.WriteString(stdout, page); err != nil {
			return err
		}
		_, err := io.WriteString(stderr, table)
		return err
	}
	if err := atomicfile.Write(out, []byte(page), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	_, err = io.WriteString(stdout, table)
	return err
}

// machine is what the page says of the machine the benchmarks ran on.
type machine struct {
	CPU   string
	Cores int
	Go    string
	Date  string
	Load  string // /proc/loadavg's first three fields
}

// readMachine reads the CPU model from the benchmark output (or /proc/cpuinfo), the cores and what else names
// the CPU (family, model and stepping: a virtual machine's model name is often only the vendor's line) from
// /proc/cpuinfo, the Go version (this program is built by the toolchain `make bench` used) and today's date (UTC).
func readMachine(rs *results) machine {
	m := machine{CPU: rs.CPU, Go: runtime.Version(), Date: time.Now().UTC().Format("2006-01-02")}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		ci := cpuinfo(f)
		if m.CPU == "" {
			m.CPU = ci.model
		}
		if ci.detail != "" {
			m.CPU += " (" + ci.detail + ")"
		}
		m.Cores = ci.cores
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = strings.Join(f[:3], ", ")
		}
	}
	if m.Cores == 0 {
		m.Cores = runtime.NumCPU()
	}
	return m
}

// cpuInfo is what /proc/cpuinfo says of the CPU.
type cpuInfo struct {
	model  string // the first "model name"
	cores  int    // the processors it lists
	detail string // "family 25, model 1, stepping 1, under a hypervisor": the first processor's, what it has of them
}

// cpuinfo reads /proc/cpuinfo.
func cpuinfo(r io.Reader) cpuInfo {
	var ci cpuInfo
	var detail []string
	hypervisor := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			ci.cores++
		case "model name":
			if ci.model == "" {
				ci.model = v
			}
		case "cpu family", "model", "stepping":
			if ci.cores == 1 {
				detail = append(detail, strings.TrimPrefix(k, "cpu ")+" "+v)
			}
		case "flags":
			if ci.cores == 1 {
				hypervisor = strings.Contains(" "+v+" ", " hypervisor ")
			}
		}
	}
	if hypervisor {
		detail = append(detail, "under a hypervisor")
	}
	ci.detail = strings.Join(detail, ", ")
	return ci
}

// renderTable is the Markdown table of rows(): one line per row.
func renderTable(rs *results) string {
	var b strings.Builder
	b.WriteString("| What is measured | kubeup | Goal | Met | Anchor (kops / Terraform) and source |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, r := range rows() {
		name := r.Bench
		res := rs.get(name)
		if res == nil && r.Alt != "" && rs.get(r.Alt) != nil {
			name, res = r.Alt, rs.get(r.Alt)
		}
		figure, met := "not measured (`"+r.Bench+"` is not in the input)", "not measured"
		if rs.failed[r.Bench] || rs.failed[r.Alt] || rs.failed[strings.SplitN(r.Bench, "/", 2)[0]] {
			figure = "not measured: `" + r.Bench + "` failed (see bench.out)"
		}
		if res != nil {
			figure = r.Figure(res) + " (`" + name + "`)"
			met = "n/a (no goal)"
			if r.Met != nil {
				met = r.Met(res, rs)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(r.What), cell(figure), cell(r.Goal), cell(met), cell(r.Anchor(rs)))
	}
	return b.String()
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// renderPage is docs/performance.md.
func renderPage(m machine, table string, rs *results) string {
	var b strings.Builder
	b.WriteString(`# Performance

<!-- Generated by hack/perftable from the output of make bench: do not edit by hand. -->

Regenerate with ` + "`make bench`" + ` (it runs the benchmarks into ` + "`bench.out`" + `, then
` + "`go run ./hack/perftable -o docs/performance.md <bench.out`" + `). Each row sets kubeup's figure beside its
goal (from issues 14 and 25) and an anchor: kops' or Terraform's figure, either measured on this machine by a model of
their executor written for the comparison (` + "`engine/anchor_bench_test.go`" + `: kops' waves, Terraform's bounded walk)
or documented, with its source. A row whose benchmark did not run says "not measured".

`)
	fmt.Fprintf(&b, "Machine: %s, %d cores (`/proc/cpuinfo`); %s; %s/%s; run on %s (UTC). Wall-clock figures\n", m.CPU, m.Cores, m.Go, rs.GOOS, rs.GOARCH, m.Date)
	b.WriteString("depend on the machine and on what else runs on it; call counts do not.")
	if m.Load != "" {
		fmt.Fprintf(&b, " Load average (1, 5, 15 minutes) when the table was made: %s.", m.Load)
	}
	b.WriteString("\n\n")
	b.WriteString(table)
	b.WriteString("\nSources of the anchors:\n\n")
	for _, s := range allSources {
		fmt.Fprintf(&b, "- %s: %s\n", cite(s), s.Says)
	}
	b.WriteString(`
How the figures are taken:

- engine rows: ` + "`go test -bench` of `engine`" + `; time per run of validating and running the graph (building it is
  not timed); B/task is the bytes allocated per task. The anchor is a near-limit executor: a model of kops' waves
  that runs the same graphs of the same tasks (Find and a comparison each) without kops' per-wave log line,
  reflection-based diff, retries or any bookkeeping; kops' own code runs several times slower (issue 25), so the
  bar is within 2x of the model. Where kubeup's extra time went (CPU profiles of the 10k layered graph): before
  issue 25, about a quarter in compiling the graph (a map lookup by key, two strings hashed, per dependency), an
  eighth in comparing (` + "`reflect.DeepEqual`" + ` boxing every pointer field) and a quarter in handing each task through
  the run loop's channels to a worker and back. Now a worker that finishes a task starts its dependents itself
  under one lock, a dependency is found by its address, pointer fields are compared through what they point to, and
  the attempt is its own context; what is left beyond the model is the engine's real work per task: the lifecycle,
  field-rule diff and output copy by reflection, the deadline's clock, a context per attempt, the class's window,
  and the executor's arrays (state, pending, attempts, errors). On the 100k layered graph about 40% of kubeup's
  time is compile's look-up of its 300,000 dependencies among 100,000 tasks (a map, cache misses), where the model
  follows the pointers it was built with. A second pass (profiles of the 1k wide and layered graphs, which were
  2.0-2.4x the model): the 128-256 workers of a run queued on its lock, which a worker held while it started
  goroutines and woke idle workers (the mutex profile counted 153 s of waiting per 2,000 runs of the 1k wide
  graph), and Validate hashed every task's address into a new map each run (a fifth of a 1k run). Now the lock
  covers the bookkeeping only and the jobs are handed off after it (27.5 s of waiting), and the graph indexes its
  tasks' addresses as they are added, as the model resolves its pointers when it is built (Validate of the 1k
  graphs 3x faster). What was left beyond the model on small graphs was scheduling: each task that another's finish
  made ready went through a channel to an idle worker (a goroutine woken: 342 per run of the 1k layered graph),
  where the model starts a goroutine per task of its wave. Now a worker whose task was short (under 50 us: work
  for the CPU, not a wait) hands off the others it made ready only while fewer tasks run than there are
  processors, and runs the rest itself as it finishes; ready tasks still waiting 1 ms later are handed off by the
  run loop (the task the worker kept was a long one after all). 143 goroutines woken per run; a task that waits
  (an API call) is never short, so the latency and rate-limited rows run as before. A third pass (issue 25: the
  1k wide graph was still 2.36x the model; profile of its runs): the run's first tasks were still started all at
  once, a goroutine each up to the window (128), each growing its stack on its first Find, parked when the ready
  tasks ran out and woken by the run's end; on a wide graph that start was the largest fixed cost of a run. Now
  the run loop starts as many as there are processors and waits, yielding, until one of them finishes short (the
  rest are left to the workers, as after any short attempt) or one has run for 50 us (a wait: the rest are handed
  off at once, as before, so a layer of slow calls starts 50 us late, not a timer's millisecond). And Validate
  looked each dependency up by its address (2,700 map look-ups that miss the cache on the 1k layered graph, a
  seventh of its run): Add now finds a task's dependencies as it adds it, as the model resolves its pointers when
  it is built, and Validate only checks each is still the task found (half its CPU). What is left beyond the model
  there is the per-task work above, and the collector: building a graph (maps of every key and address, grown as
  tasks are added) leaves garbage that the collector sweeps and marks while the next run is timed. On 2 cores
  loaded by other work the engine's figure moves more than the model's: a verdict on a wall time within a few
  percent of its bar flips with the machine's load.
- latency and rate-limited rows: wall time of a run, as a multiple of its bound (the critical path; or what the
  API's token bucket allows: (tasks - burst) / rate). The rate-limited API is a token bucket in the benchmark's
  world (100 calls a second, 10 tokens), shared by all 1,000 tasks; a call that finds no token fails after 5 ms
  with a throttling error the engine classes as retryable. What kubeup does (engine/concurrency.go, its own
  design): a class's window starts open (half its cap, 128) so that a hundred slow calls start at once; the first
  retryable failure gives the class a client-side token bucket, whose rate starts at what the API let succeed (the
  successes of the last second, or half the window a second if more), grows by 4 calls a second per success
  until the next failure (it finds the API's rate within a fraction of a second), then by 0.1 per success (10% a
  second), and is cut by 0.9 by each later failure of the current epoch (the window is left alone then); a task's
  first retry waits for a token of that bucket, not for the backoff. The API's own bucket absorbs the saw-tooth,
  so the calls go through at nearly its rate with a throttled call or two per cycle; most throttled calls are the
  first burst's, when the open window meets an empty bucket. The AWS SDK's adaptive mode
  does the like with a cubic growth; the anchor is Terraform's model (a bounded walk at -parallelism=10) whose
  throttled calls are retried in place by the AWS SDK's own backoff (` + "`aws/retry`" + `'s ExponentialJitterBackoff, 20 s
  cap), without the SDK's 3-attempt limit and retry quota (with them some of its tasks would fail).
- update row: the critical path is what no schedule can beat at 50 ms a call. update --yes runs three graphs one
  after the other (the dry run, the apply, and the dry run that checks it, as AWS's reads lag its writes) and,
  between them, calls of its own (after the apply, the three reads that find what the update left unused). The
  bound is the sum of each graph's longest dependency chain, a task weighing its calls x 50 ms and its own waits
  (Route53's first GetChange comes half a second after the change), and of the pipeline's calls x 50 ms, measured
  in a calibration without latency (` + "`test/bench/criticalpath_test.go`" + `). Before issue 25's engine work the
  bound counted the dry run's and the apply's calls only (600 ms for 50 groups, where the update cannot take less
  than about 1.3 s), and the update's time without latency, called mostly CPU, held the half-second poll. The
  rest of the wall time is CPU on the path, on 2 cores: the node configurations (52 YAML objects made and redacted
  for the plan in each graph, and read back and redacted in the check's: about a quarter of the CPU in a profile
  of the benchmark), the AWS SDK's client side (signing, XML) and the fake's server side (a tenth). Since issue
  25's third pass an object read back as it was made shows as the task's own redaction (not redacted again: the
  check's 52), and the redaction reads the kind from the object's kind line instead of decoding the whole YAML
  for it (one decode of two). The pipeline's three reads after the apply
  could overlap the apply's end (cloudup), which would take 150 ms off the wall time and the bound alike.
- API calls: counted by the fakes (` + "`internal/fakeaws`, `internal/fakegce`" + `) on a no-op run after an apply; a list
  call is a Describe*/List* (or the GCE list methods).
- protokube: kubeup makes a 3-instance cluster in the AWS fake, whose etcd volumes show on loop devices, and
  protokube converges the instances. Then the ` + "`protokube-aws`" + ` binary (the aws machines' build) of the first
  instance runs rounds every 100 ms: CPU is the user + system time per round of the process and of the children it
  waited for (an idle round runs none: a mounted ext volume is not probed), from ` + "`/proc/PID/stat`" + ` over 60
  rounds; RSS is its ` + "`VmRSS`" + ` (peak ` + "`VmHWM`" + `), split into ` + "`RssAnon`" + ` and ` + "`RssFile`" + `, from ` + "`/proc/PID/status`" + ` after
  them, and the live heap is the most a GC reported (` + "`GODEBUG=gctrace=1`" + `). About 9 MB is memory protokube
  allocates (heap, stacks, the runtime); the rest is pages of its binary that start-up and the rounds touch, and
  the figure moves with the page cache. Before issue 25 the binary linked both clouds' SDKs and kept every
  exported method (gRPC's trace pages use html/template, which makes the linker keep them): 77 MB stripped, 40 MB
  of file pages resident. protokube-aws links the AWS SDK only and is built with the grpcnotrace tag.
- binary sizes: each node binary built as ` + "`make build`" + ` builds it (static, linux/amd64, -trimpath, its build tags),
  stripped (-s -w), in MB of 10^6 bytes.
  Wall time, allocations and API calls are of rounds run in the benchmark's process (allocations include the
  in-process fake's own, an upper bound).
- nodeup: a root a first apply converged, without systemd (unit files only); the binary's wall and CPU time per
  re-run (the mean of 10), and ` + "`nodeup.Run`" + ` in the benchmark's process for its time and allocations.
`)
	return b.String()
}
