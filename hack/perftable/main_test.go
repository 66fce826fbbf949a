package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// engineOut is real output of `go test -bench -benchmem ./engine/` on the development machine (trimmed).
const engineOut = `goos: linux
goarch: amd64
pkg: kubeup.dev/kubeup/engine
cpu: Oxide Virtual Turin-like Processor             
BenchmarkExecute/wide/n=1000-2         	     510	   2263470 ns/op	      2243 B/task	 2243162 B/op	   19032 allocs/op
BenchmarkKopsWaves/wide/n=1000-2         	     998	   1451127 ns/op	       162.0 B/task	         1.000 waves	  162060 B/op	    2012 allocs/op
BenchmarkKopsWaves/latency-2         	      18	  65076549 ns/op	        65.03 ms-wall	         1.301 x-critical-path	  269097 B/op	    3249 allocs/op
BenchmarkLatency-2   	       2	 536213093 ns/op	        10.72 x-lower-bound	  922328 B/op	   10046 allocs/op
--- FAIL: BenchmarkReport
    bench_test.go:254: report lacks "- line 10 (old) of file 2:"
FAIL
ok  	kubeup.dev/kubeup/engine	1.419s
`

// nodeupOut is real output of `go test -bench -benchmem ./nodeup/`.
const nodeupOut = `goos: linux
goarch: amd64
pkg: kubeup.dev/kubeup/nodeup
cpu: Oxide Virtual Turin-like Processor             
BenchmarkNodeupNoop-2   	     124	   8380877 ns/op	         8.381 ms-wall	 1757299 B/op	   12545 allocs/op
PASS
ok  	kubeup.dev/kubeup/nodeup	1.924s
`

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]result
	}{
		{
			name: "one package",
			in:   nodeupOut,
			want: map[string]result{"BenchmarkNodeupNoop": {Name: "BenchmarkNodeupNoop", Pkg: "kubeup.dev/kubeup/nodeup", Runs: 1, Iters: 124,
				Metrics: map[string]float64{"ns/op": 8380877, "ms-wall": 8.381, "B/op": 1757299, "allocs/op": 12545}}},
		},
		{
			name: "two packages concatenated: each benchmark keeps its package",
			in:   engineOut + nodeupOut,
			want: map[string]result{
				"BenchmarkExecute/wide/n=1000": {Name: "BenchmarkExecute/wide/n=1000", Pkg: "kubeup.dev/kubeup/engine", Runs: 1, Iters: 510,
					Metrics: map[string]float64{"ns/op": 2263470, "B/task": 2243, "B/op": 2243162, "allocs/op": 19032}},
				"BenchmarkKopsWaves/wide/n=1000": {Name: "BenchmarkKopsWaves/wide/n=1000", Pkg: "kubeup.dev/kubeup/engine", Runs: 1, Iters: 998,
					Metrics: map[string]float64{"ns/op": 1451127, "B/task": 162, "waves": 1, "B/op": 162060, "allocs/op": 2012}},
				"BenchmarkKopsWaves/latency": {Name: "BenchmarkKopsWaves/latency", Pkg: "kubeup.dev/kubeup/engine", Runs: 1, Iters: 18,
					Metrics: map[string]float64{"ns/op": 65076549, "ms-wall": 65.03, "x-critical-path": 1.301, "B/op": 269097, "allocs/op": 3249}},
				"BenchmarkLatency": {Name: "BenchmarkLatency", Pkg: "kubeup.dev/kubeup/engine", Runs: 1, Iters: 2,
					Metrics: map[string]float64{"ns/op": 536213093, "x-lower-bound": 10.72, "B/op": 922328, "allocs/op": 10046}},
				"BenchmarkNodeupNoop": {Name: "BenchmarkNodeupNoop", Pkg: "kubeup.dev/kubeup/nodeup", Runs: 1, Iters: 124,
					Metrics: map[string]float64{"ns/op": 8380877, "ms-wall": 8.381, "B/op": 1757299, "allocs/op": 12545}},
			},
		},
		{
			name: "-count=2 averages the runs",
			in: "pkg: kubeup.dev/kubeup/nodeup\n" +
				"BenchmarkNodeupNoop-2   	     100	   8000000 ns/op	         8.000 ms-wall\n" +
				"BenchmarkNodeupNoop-2   	     120	  10000000 ns/op	        10.000 ms-wall\n",
			want: map[string]result{"BenchmarkNodeupNoop": {Name: "BenchmarkNodeupNoop", Pkg: "kubeup.dev/kubeup/nodeup", Runs: 2, Iters: 120,
				Metrics: map[string]float64{"ns/op": 9000000, "ms-wall": 9}}},
		},
		{
			name: "a benchmark that logged: its figures on a later line; logs, FAIL and GOMAXPROCS=1 names",
			in: "pkg: kubeup.dev/kubeup/protokube\n" +
				"BenchmarkProtokubeIdleRound/aws\n" +
				"    bench_test.go:80: converged: 6 volumes\n" +
				"BenchmarkProtokubeIdleRound/aws-2         	       1	  12000000 ns/op	         3.500 cpu-ms	        0 mutating-calls\n" +
				"BenchmarkBroken-2\n" +
				"--- FAIL: BenchmarkBroken-2\n" +
				"BenchmarkOne	     10	  100 ns/op\n" +
				"FAIL\n",
			want: map[string]result{
				"BenchmarkProtokubeIdleRound/aws": {Name: "BenchmarkProtokubeIdleRound/aws", Pkg: "kubeup.dev/kubeup/protokube", Runs: 1, Iters: 1,
					Metrics: map[string]float64{"ns/op": 12000000, "cpu-ms": 3.5, "mutating-calls": 0}},
				"BenchmarkOne": {Name: "BenchmarkOne", Pkg: "kubeup.dev/kubeup/protokube", Runs: 1, Iters: 10, Metrics: map[string]float64{"ns/op": 100}},
			},
		},
		{
			name: "no benchmarks",
			in:   "ok  	kubeup.dev/kubeup/engine	1.419s\n",
			want: map[string]result{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]result{}
			for name, r := range rs.byName {
				got[name] = *r
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMachine(t *testing.T) {
	rs, err := parse(strings.NewReader(engineOut))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Oxide Virtual Turin-like Processor"; rs.CPU != want || rs.GOOS != "linux" || rs.GOARCH != "amd64" {
		t.Errorf("machine = %q %s/%s, want %q linux/amd64", rs.CPU, rs.GOOS, rs.GOARCH, want)
	}
	ci := cpuinfo(strings.NewReader("processor\t: 0\nmodel name\t: Some CPU\n\nprocessor\t: 1\nmodel name\t: Some CPU\n"))
	if ci.model != "Some CPU" || ci.cores != 2 || ci.detail != "" {
		t.Errorf("cpuinfo = %+v; want Some CPU, 2 cores, no detail", ci)
	}
	// A virtual machine's model name may be the vendor's line only: the family, model and stepping name the CPU.
	ci = cpuinfo(strings.NewReader("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n" +
		"model name\t: AMD EPYC\nstepping\t: 1\nflags\t\t: fpu vme hypervisor lahf_lm\n\n" +
		"processor\t: 1\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\nstepping\t: 1\n"))
	if want := (cpuInfo{model: "AMD EPYC", cores: 2, detail: "family 25, model 1, stepping 1, under a hypervisor"}); ci != want {
		t.Errorf("cpuinfo = %+v, want %+v", ci, want)
	}
}

func TestParseBadValue(t *testing.T) {
	_, err := parse(strings.NewReader("BenchmarkX-2   10   abc ns/op\n"))
	if err == nil || !strings.Contains(err.Error(), "BenchmarkX") {
		t.Errorf("parse of a bad value: %v, want an error naming the benchmark", err)
	}
}

// TestTable: each row shows its benchmark's figures, the verdict against its goal, and its anchor; a row whose
// benchmark is missing says "not measured".
func TestTable(t *testing.T) {
	rs, err := parse(strings.NewReader(engineOut + nodeupOut))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{} // first cell -> line
	for _, l := range strings.Split(strings.TrimSpace(renderTable(rs)), "\n")[2:] {
		cells := strings.Split(l, " | ")
		lines[strings.TrimPrefix(cells[0], "| ")] = l
	}
	if len(lines) != len(rows()) {
		t.Fatalf("%d distinct rows, want %d (one per row)", len(lines), len(rows()))
	}
	tests := []struct {
		row  string
		want []string
	}{
		{"engine: wide graph of 1,000 no-op tasks (validate + run)",
			[]string{"2.26 ms, 2,243 B/task (`BenchmarkExecute/wide/n=1000`) | within 2x of the near-limit executor on the same graph (issue 25) | met |",
				"near-limit executor (a model of kops' waves without its bookkeeping): 1.45 ms, 162 B/task (`BenchmarkKopsWaves/wide/n=1000`, measured here); kops' own executor is several times slower (issue 25); model of: [kops executor.go](https://github.com/kubernetes/kops/blob/master/upup/pkg/fi/executor.go)"}},
		{"engine: chain graph of 100,000 no-op tasks (validate + run)",
			[]string{"not measured (`BenchmarkExecute/chain/n=100000` is not in the input) | within 2x of the near-limit executor on the same graph (issue 25) | not measured", "not measured (`BenchmarkKopsWaves/chain/n=100000`)"}},
		{"engine: 1,000 tasks, 10 layers, fan-in 3, 5 ms per Find (latency-bound)",
			[]string{"536 ms (10.7 x critical path)", "not met: 10.7x, goal 1.20x", "kops' waves: 65.1 ms (1.30 x critical path)", "not measured (`BenchmarkTerraformWalk/latency`)", "535 ms at fixed 10", "(`BenchmarkLatency`)"}},
		{"nodeup re-run with nothing to do, control-plane graph (--root, unit files only)",
			[]string{"? ms for the binary (process start included; ? ms of CPU); 8.38 ms in process, 1.68 MiB and 12,545 allocs per run (`BenchmarkNodeupNoop`)", "| under 200 ms | met |"}},
		{"no-op `kubeup update cluster` on the aws fake, 50-ig cluster: API calls",
			[]string{"not measured", "ebsvolume.go"}},
		{"engine: dry-run report of 10,000 changes (Plan.WriteText)",
			[]string{"| not measured: `BenchmarkReport` failed (see bench.out) |"}},
	}
	for _, tt := range tests {
		line, ok := lines[tt.row]
		if !ok {
			t.Errorf("no row %q", tt.row)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(line, w) {
				t.Errorf("row %q:\n%s\nwant it to contain %q", tt.row, line, w)
			}
		}
	}
}

func TestVerdicts(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"at most, met", atMost(0, 0, num), "met"},
		{"at most, not met", atMost(3, 1, num), "not met: 3, goal 1"},
		{"less, equal is not met", less(40, 40, num), "not met: 40, goal under 40"},
		{"all met", allMet("met", "met"), "met"},
		{"all met, one not", allMet("met", "not met: x"), "not met: x"},
		{"num", num(12345.678), "12,346"},
		{"num small", num(0.01234), "0.0123"},
		{"ms", ms(41829674568), "41.8 s"},
		{"size", size(1757299), "1.68 MiB"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestTableLatency: the latency row reads BenchmarkLatency/adaptive, with the fixed-10 run among its anchors.
func TestTableLatency(t *testing.T) {
	rs, err := parse(strings.NewReader("pkg: kubeup.dev/kubeup/engine\n" +
		"BenchmarkLatency/adaptive-2         	      14	  57352416 ns/op	         1.147 x-critical-path	        57.35 ms-wall\n" +
		"BenchmarkLatency/fixed-10-2         	       2	 590000000 ns/op	        11.80 x-critical-path	       590.0 ms-wall\n"))
	if err != nil {
		t.Fatal(err)
	}
	table := renderTable(rs)
	for _, w := range []string{"| 57.4 ms (1.15 x critical path) (`BenchmarkLatency/adaptive`) | within 1.2x the critical path (10 x 5 ms; issue 25) | met |",
		"kubeup at a fixed 10 (the engine before): 590 ms (11.8 x critical path) (`BenchmarkLatency/fixed-10`, measured here)"} {
		if !strings.Contains(table, w) {
			t.Errorf("table:\n%s\nwant it to contain %q", table, w)
		}
	}
}

// TestTableNearLimit: an engine row is met within 2x of the near-limit executor, not met past it.
func TestTableNearLimit(t *testing.T) {
	rs, err := parse(strings.NewReader("pkg: kubeup.dev/kubeup/engine\n" +
		"BenchmarkExecute/layered/n=10000-2   	 50	  11000000 ns/op	 265.0 B/task\n" +
		"BenchmarkExecute/layered/n=100000-2  	  5	 240000000 ns/op	 265.0 B/task\n" +
		"BenchmarkKopsWaves/layered/n=10000-2 	100	   5590000 ns/op	 162.0 B/task	10.00 waves\n" +
		"BenchmarkKopsWaves/layered/n=100000-2	 10	 118000000 ns/op	 175.0 B/task	10.00 waves\n"))
	if err != nil {
		t.Fatal(err)
	}
	table := renderTable(rs)
	for _, w := range []string{"| 11 ms, 265 B/task (`BenchmarkExecute/layered/n=10000`) | within 2x of the near-limit executor on the same graph (issue 25) | met |",
		"240 ms, 265 B/task (`BenchmarkExecute/layered/n=100000`) | within 2x of the near-limit executor on the same graph (issue 25) | not met: 240 ms, goal 236 ms |"} {
		if !strings.Contains(table, w) {
			t.Errorf("table:\n%s\nwant it to contain %q", table, w)
		}
	}
}

// TestTableRateLimit: the rate-limited row is met within 1.1x its bound with no more throttled calls than the
// SDK-backoff walk; it says which of the two it misses.
func TestTableRateLimit(t *testing.T) {
	const walk = "BenchmarkSDKBackoffWalk/ratelimit-2	1	15773480282 ns/op	1128 calls-total	15773 ms-wall	128.0 throttled-calls	1.593 x-bound\n"
	for _, tt := range []struct {
		adaptive string
		want     []string
	}{
		{"BenchmarkRateLimit/adaptive-2	1	10700000000 ns/op	1106 calls-total	10700 ms-wall	106.0 throttled-calls	1.081 x-bound\n",
			[]string{"| 10,700 ms wall (1.08 x the bound), 106 throttled calls (`BenchmarkRateLimit/adaptive`) |", "| met |",
				"Terraform's walk at -parallelism=10 with the AWS SDK's backoff: 15,773 ms wall (1.59 x the bound), 128 throttled calls (`BenchmarkSDKBackoffWalk/ratelimit`, measured here)",
				"kubeup at a fixed 10: not measured (`BenchmarkRateLimit/fixed-10`)"}},
		{"BenchmarkRateLimit/adaptive-2	1	11700000000 ns/op	1106 calls-total	11700 ms-wall	130.0 throttled-calls	1.182 x-bound\n",
			[]string{"| not met: 1.18x, goal 1.10x; not met: 130 throttled, goal 128 throttled |"}},
	} {
		rs, err := parse(strings.NewReader("pkg: kubeup.dev/kubeup/engine\n" + tt.adaptive + walk))
		if err != nil {
			t.Fatal(err)
		}
		table := renderTable(rs)
		for _, w := range tt.want {
			if !strings.Contains(table, w) {
				t.Errorf("table:\n%s\nwant it to contain %q", table, w)
			}
		}
	}
}

// TestRunWritesPage: with -o, the page is written (intro, machine, table) and the table printed.
func TestRunWritesPage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "performance.md")
	var stdout, stderr bytes.Buffer
	if err := run(strings.NewReader(nodeupOut), out, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"# Performance", "make bench", "Oxide Virtual Turin-like Processor", "| What is measured |", stdout.String(),
		"- [EC2 API throttling](https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html): EC2 throttles"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("the page lacks %q:\n%s", w, page)
		}
	}
	if !strings.HasPrefix(stdout.String(), "| What is measured |") || stderr.Len() != 0 {
		t.Errorf("stdout:\n%s\nstderr:\n%s\nwant the table on stdout, nothing on stderr", stdout.String(), stderr.String())
	}
	if err := run(strings.NewReader("PASS\n"), out, &stdout, &stderr); err == nil {
		t.Error("run without benchmark results: no error")
	}
}

// TestTableProtokubeRSS: protokube's RSS is met under issue 25's 30 MB, not at 35.
func TestTableProtokubeRSS(t *testing.T) {
	for _, tt := range []struct{ rss, want string }{
		{"29.0", "| met |"},
		{"35.0", "| not met: 35 MB, goal under 30 MB |"},
	} {
		rs, err := parse(strings.NewReader("pkg: kubeup.dev/kubeup/protokube\n" +
			"BenchmarkProtokubeIdleRound/aws-2 	 60	 7000000 ns/op	 3.500 cpu-ms	 " + tt.rss + " rss-mb\n"))
		if err != nil {
			t.Fatal(err)
		}
		if table := renderTable(rs); !strings.Contains(table, "RSS under 30 MB (issue 25) "+tt.want) {
			t.Errorf("RSS %s MB: table:\n%s\nwant the goal RSS under 30 MB (issue 25) and %q", tt.rss, table, tt.want)
		}
	}
}

// TestTableBinarySizes: each node binary has a row; nodeup's are held to under 20 MB stripped (issue 25), and
// protokube's are listed (its bar is its RSS).
func TestTableBinarySizes(t *testing.T) {
	rs, err := parse(strings.NewReader("pkg: kubeup.dev/kubeup/test/bench\n" +
		"BenchmarkNodeBinarySize/nodeup-aws-2 	 1	 7000000000 ns/op	 12.66 mb-stripped\n" +
		"BenchmarkNodeBinarySize/nodeup-gce-2 	 1	 7000000000 ns/op	 20.96 mb-stripped\n" +
		"BenchmarkNodeBinarySize/protokube-aws-2 	 1	 7000000000 ns/op	 15.52 mb-stripped\n"))
	if err != nil {
		t.Fatal(err)
	}
	table := renderTable(rs)
	for _, want := range []string{
		"| 12.7 MB (`BenchmarkNodeBinarySize/nodeup-aws`) | under 20 MB stripped (issue 25) | met |",
		"| 21.0 MB (`BenchmarkNodeBinarySize/nodeup-gce`) | under 20 MB stripped (issue 25) | not met: 21.0 MB, goal under 20 MB |",
		"| 15.5 MB (`BenchmarkNodeBinarySize/protokube-aws`) | none set: listed (issue 25); protokube's bar is its RSS (the idle-round row) | n/a (no goal) |",
		"not measured (`BenchmarkNodeBinarySize/nodeup` is not in the input)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table:\n%s\nwant %q", table, want)
		}
	}
}
