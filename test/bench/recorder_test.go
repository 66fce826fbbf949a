package bench

import (
	"net/url"
	"slices"
	"strings"
	"sync"

	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/internal/fakegce"
)

// call is one cloud API call as the recorder classifies it.
type call struct {
	op        string
	list      bool   // a list of one resource type: Describe*/List* (aws), *.list, *.aggregatedList (gce)
	zone      string // where a list looks: its zone, else its region, else "global"
	mutating  bool
	throttled bool
}

// recorder records the cloud API calls a fake receives (its Observe hook), leaving out the state store's.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) add(c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// take returns the calls recorded since the last take.
func (r *recorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.calls
	r.calls = nil
	return calls
}

func (r *recorder) observeAWS(c fakeaws.Call) {
	if c.Service == "s3" { // the state store
		return
	}
	list := strings.HasPrefix(c.Op, "Describe") || strings.HasPrefix(c.Op, "List")
	zone := c.Region
	if c.Service == "iam" || c.Service == "route53" {
		zone = "global"
	}
	if z := availabilityZones(c.Params); z != "" {
		zone = z
	}
	r.add(call{op: c.Op, list: list, zone: zone, mutating: fakeaws.Mutating(c.Op), throttled: c.Throttled})
}

// availabilityZones returns the zones an EC2 call filters on (Filter.N.Name=availability-zone), comma separated,
// or "".
func availabilityZones(params url.Values) string {
	var zones []string
	for k, v := range params {
		n, ok := strings.CutSuffix(k, ".Name")
		if !ok || !strings.HasPrefix(k, "Filter.") || len(v) != 1 || v[0] != "availability-zone" {
			continue
		}
		for k2, v2 := range params {
			if strings.HasPrefix(k2, n+".Value.") {
				zones = append(zones, v2...)
			}
		}
	}
	slices.Sort(zones)
	return strings.Join(zones, ",")
}

func (r *recorder) observeGCE(c fakegce.Call) {
	list := false
	for _, s := range []string{".list", ".aggregatedList", ".listManagedInstances"} {
		list = list || strings.HasSuffix(c.Op, s)
	}
	zone := "global"
	if c.Where != "" {
		zone = c.Where
	}
	r.add(call{op: c.Op, list: list, zone: zone, mutating: fakegce.Mutating(c.Op), throttled: c.RateLimited})
}

// stats are the figures of a run's calls.
type stats struct {
	total, mutating, throttled int
	// maxList is the most list calls of one operation in one zone; maxListOp names it ("DescribeVolumes in
	// us-east-1").
	maxList   int
	maxListOp string
	// mutatingOps counts the mutating calls by operation.
	mutatingOps map[string]int
}

func statsOf(calls []call) stats {
	s := stats{mutatingOps: map[string]int{}}
	lists := map[string]int{}
	for _, c := range calls {
		s.total++
		if c.throttled {
			s.throttled++
			continue // refused before any work: neither a list nor a change
		}
		if c.mutating {
			s.mutating++
			s.mutatingOps[c.op]++
		}
		if c.list {
			k := c.op + " in " + c.zone
			lists[k]++
			if n := lists[k]; n > s.maxList || n == s.maxList && k < s.maxListOp {
				s.maxList, s.maxListOp = n, k
			}
		}
	}
	return s
}
