package main

import (
	"fmt"
	"math"
	"strings"
)

// row is one line of the table: what is measured, kubeup's figure from the benchmark Bench, the goal, whether it
// is met, and the anchor beside it with its source.
type row struct {
	What  string
	Bench string
	// Alt is the benchmark an older output holds instead of Bench, if any.
	Alt string
	// Figure formats kubeup's figures; Met says "met", or "not met" with the gap; "" when there is no goal.
	Figure func(r *result) string
	Goal   string
	Met    func(r *result, rs *results) string
	// Anchor is the kops or Terraform figure and its source (it may read measured anchors from rs).
	Anchor func(rs *results) string
}

// source is a document an anchor cites: the cell links to it by a short title; the page lists what it says.
type source struct {
	Title, URL, Says string
}

// The sources the anchors cite.
var (
	srcKopsExecutor = source{"kops executor.go", "https://github.com/kubernetes/kops/blob/master/upup/pkg/fi/executor.go",
		"`RunTasks` collects every task whose dependencies are done (scanning all the tasks), runs each in a goroutine of its own " +
			"(`forkJoin`, no bound on how many) and waits for all of them before it collects the next wave."}
	srcTerraform = source{"Terraform -parallelism", "https://developer.hashicorp.com/terraform/cli/commands/apply",
		"`terraform apply -parallelism=n` limits the concurrent operations as Terraform walks the graph; the default is 10 " +
			"(HashiCorp support, https://support.hashicorp.com/hc/en-us/articles/10348130482451: \"The default value for TFE_PARALLELISM is 10\")."}
	srcKopsEBS = source{"kops ebsvolume.go", "https://github.com/kubernetes/kops/blob/master/upup/pkg/fi/cloudup/awstasks/ebsvolume.go",
		"`EBSVolume.Find` sends a `DescribeVolumes` of its own, filtered by the volume's name: one list call per volume task " +
			"(6 for the main and events volumes of 3 members), and each kops task finds itself the same way."}
	srcKopsProtokube = source{"kops kube_boot.go", "https://github.com/kubernetes/kops/blob/master/protokube/pkg/protokube/kube_boot.go",
		"protokube's `RunSyncLoop` runs a round, then sleeps 1 minute; each round runs `systemctl start --no-block kubelet` " +
			"as a child process. kops publishes no CPU or memory figure for a round."}
	srcKopsEtcdManager = source{"kops etcdmanager/model.go", "https://github.com/kubernetes/kops/blob/master/pkg/model/components/etcdmanager/model.go",
		"the etcd-manager pods, which took over claiming and mounting the etcd volumes from protokube, request 200m CPU " +
			"(main) and 100m (events): a reservation, not a per-round figure."}
	srcAWSThrottling = source{"EC2 API throttling", "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html",
		"EC2 throttles each account per Region with token buckets (e.g. `DescribeHosts`: 100 tokens, refilled at 20 a " +
			"second); a call past its bucket fails with `RequestLimitExceeded`."}
	srcSDKRetry = source{"AWS SDK for Go v2 retries", "https://docs.aws.amazon.com/sdk-for-go/v2/developer-guide/configure-retries-timeouts.html",
		"the standard retryer backs off exponentially with jitter (a random delay below 2^attempt seconds, at most 20 s); the " +
			"adaptive mode adds a client-side token bucket whose rate it cuts on throttling and grows back along a cubic."}
	srcIssue25 = source{"issue 25", "",
		"kops' real executor code (upup/pkg/fi/executor.go), run on this machine with kubeup's per-task work, took 49.6 ms on the " +
			"10k layered graph where kubeup took 13.1 ms; the near-limit model here runs about 7x faster than kops' code."}
	srcIssue14 = source{"issue 14", "",
		"measured on this machine before the adaptive engine: the latency case took 535 ms at the engine's former fixed " +
			"concurrency of 10, and 56 ms in kops' unbounded waves."}
)

// allSources are the sources in the order the page lists them.
var allSources = []source{srcKopsExecutor, srcTerraform, srcKopsEBS, srcKopsProtokube, srcKopsEtcdManager, srcAWSThrottling, srcSDKRetry, srcIssue14, srcIssue25}

// cite is a short link to s.
func cite(s source) string {
	if s.URL == "" {
		return s.Title
	}
	return "[" + s.Title + "](" + s.URL + ")"
}

// measuredAnchor is an anchor benchmark's figures, or "not measured".
func measuredAnchor(rs *results, name string, format func(r *result) string) string {
	r := rs.get(name)
	if r == nil {
		return "not measured (`" + name + "`)"
	}
	return format(r) + " (`" + name + "`, measured here)"
}

// rows are the table's rows, in order.
func rows() []row {
	var rs []row
	for _, shape := range []string{"wide", "chain", "layered"} {
		for _, n := range []int{1000, 10000, 100000} {
			sub := fmt.Sprintf("%s/n=%d", shape, n)
			kops := "BenchmarkKopsWaves/" + sub
			rs = append(rs, row{
				What:   fmt.Sprintf("engine: %s graph of %s no-op tasks (validate + run)", shape, thousands(n)),
				Bench:  "BenchmarkExecute/" + sub,
				Figure: func(r *result) string { return msAndBytes(r) },
				Goal:   "within 2x of the near-limit executor on the same graph (issue 25)",
				Met: func(r *result, all *results) string {
					k := all.get(kops)
					if k == nil {
						return "no anchor to compare"
					}
					return atMost(r.Metrics["ns/op"], 2*k.Metrics["ns/op"], func(v float64) string { return ms(v) })
				},
				Anchor: func(all *results) string {
					return "near-limit executor (a model of kops' waves without its bookkeeping): " + measuredAnchor(all, kops, msAndBytes) +
						"; kops' own executor is several times slower (" + cite(srcIssue25) + "); model of: " + cite(srcKopsExecutor)
				},
			})
		}
	}
	rs = append(rs, row{
		What:  "engine: dry-run report of 10,000 changes (Plan.WriteText)",
		Bench: "BenchmarkReport",
		Figure: func(r *result) string {
			return fmt.Sprintf("%s, %s allocated, %s of report", ms(r.Metrics["ns/op"]), size(r.Metrics["B/op"]), size(r.Metrics["report-bytes"]))
		},
		Goal: "none set (issue 14 asks for the figure)",
		Anchor: func(*results) string {
			return "none: neither kops nor Terraform publishes a figure for rendering a plan"
		},
	})
	rs = append(rs, row{
		What:  "engine: 1,000 tasks, 10 layers, fan-in 3, 5 ms per Find (latency-bound)",
		Bench: "BenchmarkLatency/adaptive",
		Alt:   "BenchmarkLatency",
		Figure: func(r *result) string {
			return fmt.Sprintf("%s (%s x critical path)", ms(r.Metrics["ns/op"]), num(criticalMultiple(r)))
		},
		Goal: "within 1.2x the critical path (10 x 5 ms; issue 25)",
		Met: func(r *result, _ *results) string {
			x := criticalMultiple(r)
			if math.IsNaN(x) {
				return "no x-critical-path metric"
			}
			return atMost(x, 1.2, func(v float64) string { return num(v) + "x" })
		},
		Anchor: func(all *results) string {
			x := func(r *result) string {
				return fmt.Sprintf("%s (%s x critical path)", ms(r.Metrics["ns/op"]), num(r.Metrics["x-critical-path"]))
			}
			return "kubeup at a fixed 10 (the engine before): " + measuredAnchor(all, "BenchmarkLatency/fixed-10", x) +
				"; kops' waves: " + measuredAnchor(all, "BenchmarkKopsWaves/latency", x) +
				"; Terraform's walk at -parallelism=10: " + measuredAnchor(all, "BenchmarkTerraformWalk/latency", x) +
				"; issue 14 measured 535 ms at fixed 10, 56 ms in waves (" + cite(srcIssue14) + "); models: " + cite(srcKopsExecutor) + ", " + cite(srcTerraform)
		},
	})
	rateLimited := func(r *result) string {
		return fmt.Sprintf("%s ms wall (%s x the bound), %s throttled calls", num(r.Metrics["ms-wall"]), num(r.Metrics["x-bound"]),
			num(r.Metrics["throttled-calls"]))
	}
	rs = append(rs, row{
		What: "engine: 1,000 tasks, 10 layers, fan-in 3, 5 ms per Find, sharing a token bucket of 100 calls a second " +
			"(10 tokens; a refused call fails after 5 ms as throttled): rate-limited",
		Bench:  "BenchmarkRateLimit/adaptive",
		Figure: rateLimited,
		Goal: "within 1.1x the bound the bucket allows ((1,000 - 10) / 100 a second = 9.9 s), with no more throttled calls " +
			"than a bounded walk retrying with the AWS SDK's backoff (issue 25)",
		Met: func(r *result, all *results) string {
			walk := all.get("BenchmarkSDKBackoffWalk/ratelimit")
			if walk == nil {
				return allMet(atMost(r.Metrics["x-bound"], 1.1, func(v float64) string { return num(v) + "x" }), "no SDK-backoff walk to compare")
			}
			return allMet(atMost(r.Metrics["x-bound"], 1.1, func(v float64) string { return num(v) + "x" }),
				atMost(r.Metrics["throttled-calls"], walk.Metrics["throttled-calls"], func(v float64) string { return num(v) + " throttled" }))
		},
		Anchor: func(all *results) string {
			return "Terraform's walk at -parallelism=10 with the AWS SDK's backoff: " + measuredAnchor(all, "BenchmarkSDKBackoffWalk/ratelimit", rateLimited) +
				"; kubeup at a fixed 10: " + measuredAnchor(all, "BenchmarkRateLimit/fixed-10", rateLimited) +
				"; " + cite(srcSDKRetry) + ", " + cite(srcAWSThrottling) + ", " + cite(srcTerraform)
		},
	})
	for _, cloud := range []string{"aws", "gce"} {
		for _, size := range []string{"3-member", "5-member", "50-ig"} {
			anchor := func(*results) string {
				return "kops: one read call per task, no batching, e.g. 6 `DescribeVolumes` for 3 members' volumes (" + cite(srcKopsEBS) + ")"
			}
			if cloud == "gce" {
				anchor = func(*results) string {
					return "kops: one read call per task, no batching, as on AWS (" + cite(srcKopsEBS) + ")"
				}
			}
			rs = append(rs, row{
				What:  fmt.Sprintf("no-op `kubeup update cluster` on the %s fake, %s cluster: API calls", cloud, size),
				Bench: fmt.Sprintf("BenchmarkNoopUpdate/%s/%s", cloud, size),
				Figure: func(r *result) string {
					return fmt.Sprintf("%s mutating, at most %s list per type per zone, %s calls in all",
						metric(r, "mutating-calls"), metric(r, "list-calls-max-per-type-per-zone"), metric(r, "calls-total"))
				},
				Goal: "0 mutating calls; at most 1 list call per resource type per zone",
				Met: func(r *result, _ *results) string {
					return allMet(atMost(r.Metrics["mutating-calls"], 0, num), atMost(r.Metrics["list-calls-max-per-type-per-zone"], 1, num))
				},
				Anchor: anchor,
			})
		}
	}
	rs = append(rs, row{
		What:  "`kubeup update cluster --yes`, 50 instance groups, AWS fake with 50 ms per call",
		Bench: "BenchmarkUpdateLatency/aws/50-ig",
		Figure: func(r *result) string {
			f := fmt.Sprintf("%s ms wall; critical path %s ms (%s x)", metric(r, "ms-wall"), metric(r, "ms-critical-path"), metric(r, "x-critical-path"))
			if _, ok := r.Metrics["ms-wall-no-latency"]; ok {
				f += fmt.Sprintf("; %s ms without the 50 ms latency (CPU, and the tasks' own waits)", metric(r, "ms-wall-no-latency"))
			}
			return f
		},
		Goal: "within 1.5x the critical path: the dry run's, the apply's and the check's longest chains of calls and waits, and the pipeline's own calls (issue 25)",
		Met: func(r *result, _ *results) string {
			return atMost(r.Metrics["x-critical-path"], 1.5, func(v float64) string { return num(v) + "x" })
		},
		Anchor: func(*results) string {
			return "Terraform: at most 10 calls at once (" + cite(srcTerraform) + "); kops: unbounded waves (" + cite(srcKopsExecutor) + ")"
		},
	})
	rs = append(rs, row{
		What:  "`update --yes`, 50 instance groups, AWS fake throttling above 20 concurrent calls: adaptive (the defaults)",
		Bench: "BenchmarkThrottle/aws/50-ig/adaptive",
		Figure: func(r *result) string {
			return fmt.Sprintf("%s throttled calls, %s ms wall", num(r.Metrics["throttled-calls"]), num(r.Metrics["ms-wall"]))
		},
		Goal: "fewer throttled calls than fixed concurrency 64, less wall time than fixed concurrency 10",
		Met: func(r *result, all *results) string {
			f64, f10 := all.get("BenchmarkThrottle/aws/50-ig/fixed-64"), all.get("BenchmarkThrottle/aws/50-ig/fixed-10")
			if f64 == nil || f10 == nil {
				return "no fixed-64 or fixed-10 run to compare"
			}
			return allMet(less(r.Metrics["throttled-calls"], f64.Metrics["throttled-calls"], func(v float64) string { return num(v) + " throttled" }),
				less(r.Metrics["ms-wall"], f10.Metrics["ms-wall"], func(v float64) string { return num(v) + " ms" }))
		},
		Anchor: func(all *results) string {
			f := func(r *result) string {
				return fmt.Sprintf("%s throttled calls, %s ms wall", num(r.Metrics["throttled-calls"]), num(r.Metrics["ms-wall"]))
			}
			return "fixed 64 (unbounded-like, as kops' waves): " + measuredAnchor(all, "BenchmarkThrottle/aws/50-ig/fixed-64", f) +
				"; fixed 10 (Terraform's default): " + measuredAnchor(all, "BenchmarkThrottle/aws/50-ig/fixed-10", f) +
				"; " + cite(srcAWSThrottling) + ", " + cite(srcTerraform)
		},
	})
	rs = append(rs, row{
		What:  "protokube round with nothing to do (AWS fake): CPU",
		Bench: "BenchmarkProtokubeIdleRound/aws",
		Figure: func(r *result) string {
			return fmt.Sprintf("%s ms CPU per round (%s ms in protokube itself, the rest in the processes it runs); %s wall, %s and %s allocs per round",
				metric(r, "cpu-ms"), metric(r, "cpu-ms-self"), ms(r.Metrics["ns/op"]), size(r.Metrics["B/op"]), num(r.Metrics["allocs/op"]))
		},
		Goal: "under 10 ms CPU per round (issue 14)",
		Met: func(r *result, _ *results) string {
			return less(r.Metrics["cpu-ms"], 10, func(v float64) string { return num(v) + " ms" })
		},
		Anchor: func(*results) string {
			return "kops: a round a minute, forking `systemctl` each time; no published figure (" + cite(srcKopsProtokube) +
				"); etcd-manager requests 200m + 100m CPU (" + cite(srcKopsEtcdManager) + ")"
		},
	})
	rs = append(rs, row{
		What:  "protokube round with nothing to do (AWS fake): memory of the protokube-aws process",
		Bench: "BenchmarkProtokubeIdleRound/aws",
		Figure: func(r *result) string {
			split := ""
			if _, ok := r.Metrics["rss-file-mb"]; ok {
				// Most of the RSS is the binary's pages the process touched, not memory it allocated.
				split = fmt.Sprintf(": %s MB anonymous (heap, stacks, runtime), %s MB of the binary's file pages",
					metric(r, "rss-anon-mb"), metric(r, "rss-file-mb"))
			}
			return fmt.Sprintf("RSS %s MB%s (peak %s MB, live heap %s MB)",
				metric(r, "rss-mb"), split, metric(r, "hwm-mb"), metric(r, "heap-live-mb"))
		},
		Goal: "RSS under 30 MB (issue 25)",
		Met: func(r *result, _ *results) string {
			return less(r.Metrics["rss-mb"], 30, func(v float64) string { return num(v) + " MB" })
		},
		Anchor: func(*results) string {
			return "kubeup before issue 25: 49.4 MB, 39.7 MB of it the pages of a protokube that linked both clouds' SDKs (issue 25)"
		},
	})
	rs = append(rs, row{
		What:  "protokube round with nothing to do (AWS fake): API calls",
		Bench: "BenchmarkProtokubeIdleRound/aws",
		Figure: func(r *result) string {
			return fmt.Sprintf("%s mutating, at most %s list per type, %s calls in all per round",
				metric(r, "mutating-calls"), metric(r, "list-calls-max-per-type"), metric(r, "calls-per-round"))
		},
		Goal: "0 mutating calls; at most 1 list call per resource type",
		Met: func(r *result, _ *results) string {
			return allMet(atMost(r.Metrics["mutating-calls"], 0, num), atMost(r.Metrics["list-calls-max-per-type"], 1, num))
		},
		Anchor: func(*results) string {
			return "kops: no published call count for a round (" + cite(srcKopsProtokube) + ")"
		},
	})
	rs = append(rs, row{
		What:  "nodeup re-run with nothing to do, control-plane graph (--root, unit files only)",
		Bench: "BenchmarkNodeupNoop/control-plane",
		Alt:   "BenchmarkNodeupNoop",
		Figure: func(r *result) string {
			return fmt.Sprintf("%s ms for the binary (process start included; %s ms of CPU); %s ms in process, %s and %s allocs per run",
				metric(r, "ms-wall-binary"), metric(r, "cpu-ms-binary"), metric(r, "ms-wall"), size(r.Metrics["B/op"]), num(r.Metrics["allocs/op"]))
		},
		Goal: "under 200 ms",
		Met: func(r *result, _ *results) string {
			v, ok := r.Metrics["ms-wall-binary"]
			if !ok {
				v = r.Metrics["ms-wall"]
			}
			return less(v, 200, func(v float64) string { return num(v) + " ms" })
		},
		Anchor: func(*results) string {
			return "none published: kops runs nodeup once at boot and publishes no figure for a re-run"
		},
	})
	for _, b := range []struct{ name, what string }{
		{"nodeup", "nodeup for the local provider (file:// store; no cloud SDK)"},
		{"nodeup-aws", "nodeup for aws machines (the s3:// store: S3 of the AWS SDK only)"},
		{"nodeup-gce", "nodeup for gce machines (the gs:// store: Google's storage client)"},
		{"protokube", "protokube for the local provider (no cloud SDK)"},
		{"protokube-aws", "protokube for aws machines (EC2, Route53, S3)"},
		{"protokube-gce", "protokube for gce machines (Compute Engine, Cloud DNS, storage)"},
	} {
		nodeup := strings.HasPrefix(b.name, "nodeup")
		goal := "none set: listed (issue 25); protokube's bar is its RSS (the idle-round row)"
		if nodeup {
			goal = "under 20 MB stripped (issue 25)"
		}
		rs = append(rs, row{
			What:  "binary size: " + b.what + ", static linux/amd64, stripped, as `make build` builds it",
			Bench: "BenchmarkNodeBinarySize/" + b.name,
			Figure: func(r *result) string {
				return fmt.Sprintf("%s MB", metric(r, "mb-stripped"))
			},
			Goal: goal,
			Met: func(r *result, _ *results) string {
				if !nodeup {
					return "n/a (no goal)"
				}
				return less(r.Metrics["mb-stripped"], 20, func(v float64) string { return num(v) + " MB" })
			},
			Anchor: func(*results) string {
				return "before issue 25 every node binary linked both clouds' SDKs: nodeup 30.1 MB, protokube 76.6 MB stripped (issue 25)"
			},
		})
	}
	return rs
}

// criticalMultiple is BenchmarkLatency's wall time as a multiple of the critical path (x-critical-path; older
// runs reported x-lower-bound, the same bound when the critical path is the longer).
func criticalMultiple(r *result) float64 {
	if v, ok := r.Metrics["x-critical-path"]; ok {
		return v
	}
	if v, ok := r.Metrics["x-lower-bound"]; ok {
		return v
	}
	return math.NaN()
}

// atMost says "met" when v <= goal, else "not met" and the gap.
func atMost(v, goal float64, format func(float64) string) string {
	if v <= goal {
		return "met"
	}
	return fmt.Sprintf("not met: %s, goal %s", format(v), format(goal))
}

// less says "met" when v < goal, else "not met" and the gap.
func less(v, goal float64, format func(float64) string) string {
	if v < goal {
		return "met"
	}
	return fmt.Sprintf("not met: %s, goal under %s", format(v), format(goal))
}

// allMet joins verdicts: "met" when all are, else the ones that are not.
func allMet(verdicts ...string) string {
	var bad []string
	for _, v := range verdicts {
		if v != "met" {
			bad = append(bad, v)
		}
	}
	if len(bad) == 0 {
		return "met"
	}
	return strings.Join(bad, "; ")
}

// metric is a metric of r, or "?" when r lacks it.
func metric(r *result, unit string) string {
	v, ok := r.Metrics[unit]
	if !ok {
		return "?"
	}
	return num(v)
}

// msAndBytes is an engine benchmark's time per run and bytes per task.
func msAndBytes(r *result) string {
	return fmt.Sprintf("%s, %s B/task", ms(r.Metrics["ns/op"]), num(r.Metrics["B/task"]))
}

// ms formats nanoseconds as milliseconds (or seconds from 1 s), to 3 significant digits.
func ms(ns float64) string {
	if ns >= 1e9 {
		return num(ns/1e9) + " s"
	}
	return num(ns/1e6) + " ms"
}

// size formats a byte count with a binary prefix.
func size(b float64) string {
	switch {
	case b >= 1<<30:
		return num(b/(1<<30)) + " GiB"
	case b >= 1<<20:
		return num(b/(1<<20)) + " MiB"
	case b >= 1<<10:
		return num(b/(1<<10)) + " KiB"
	}
	return num(b) + " B"
}

// num formats v to 3 significant digits, without an exponent, and whole numbers as such.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return thousands(int64(v))
	case math.Abs(v) >= 100:
		return thousands(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// thousands formats n with commas between groups of three digits.
func thousands[T int | int64](n T) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
