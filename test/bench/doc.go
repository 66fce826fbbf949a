// Package bench holds the cloud-side benchmarks of `make bench`: kubeup's real pipeline (cloudup.Clusters, the
// model's graphs, the engine, the AWS SDK and Google's Go clients) run in this process against internal/fakeaws
// and internal/fakegce, each fake on an httptest server of its own, the state store on the fake's S3 (aws) or on
// internal/fakegcs (gce). Only the cloud's API calls are counted: the state store's are not (its lock and spec
// are the operator's side, not the cloud's).
//
// The benchmarks and their metrics (b.ReportMetric units; stable, parsed by the table generator):
//
//	BenchmarkNoopUpdate/{aws,gce}/{3-member,5-member,50-ig}
//	    an update with nothing to do, a dry run and then --yes, after update --yes made the cluster:
//	    mutating-calls                     calls that change something, both runs (goal 0; --yes with one fails)
//	    list-calls-max-per-type-per-zone   the most list calls of one resource type in one zone (or region, or
//	                                       globally, for calls that are not zonal) in one run (goal <= 1)
//	    calls-total                        every cloud API call, both runs
//	BenchmarkUpdateLatency/aws/50-ig
//	    update --yes of a new 50-instance-group cluster, every AWS call taking 50 ms:
//	    ms-wall            its wall time
//	    ms-critical-path   the bound: the longest chain of sequential API calls (times 50 ms) and of the tasks'
//	                       own waits along each graph's dependencies (dry run, apply, and the dry run that checks
//	                       it), and the pipeline's own calls (times 50 ms) between them (see criticalPath)
//	    x-critical-path    ms-wall / ms-critical-path
//	    ms-wall-no-latency the same update's wall time without latency: CPU, and the tasks' own waits
//	    pipeline-calls     the calls the pipeline makes itself, outside the graphs, one after the other
//	BenchmarkThrottle/aws/50-ig/{adaptive,fixed-64,fixed-10}
//	    update --yes of a new 50-instance-group cluster, AWS refusing calls above 20 at once, every call 100 ms:
//	    throttled-calls   calls answered with a throttling error
//	    ms-wall           its wall time
//	    calls-total       every cloud API call, refused ones included
//	BenchmarkNodeBinarySize/{nodeup,nodeup-aws,nodeup-gce,protokube,protokube-aws,protokube-gce}
//	    each node binary built as a release is (static, linux/amd64, -trimpath), stripped:
//	    mb-stripped       its size in MB (10^6 bytes)
//
// TestHarness runs a small version of each in `make test`.
package bench
