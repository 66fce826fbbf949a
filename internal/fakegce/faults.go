package fakegce

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// Faults is the fault injection of a Server: what share of API calls fail and how, how slow calls are, how long
// operations take, and how eventually consistent disks are. The metadata server and the control endpoints are
// never subject to it.
type Faults struct {
	// RateLimitRate is the share of calls (0 to 1) answered 429 with reason rateLimitExceeded.
	RateLimitRate float64 `json:"rateLimitRate,omitempty"`
	// ServerErrorRate is the share of calls answered 503 with reason backendError.
	ServerErrorRate float64 `json:"serverErrorRate,omitempty"`
	// LatencyMillis delays every call by this many milliseconds.
	LatencyMillis int `json:"latencyMillis,omitempty"`
	// SlowOperations: an operation (and a Cloud DNS change) stays RUNNING (pending) for this many more polls.
	SlowOperations int `json:"slowOperations,omitempty"`
	// DiskInvisibleCalls: a new disk is unknown to this many disks.get, disks.list and disks.aggregatedList calls
	// after its creation (404 by name, left out of lists).
	DiskInvisibleCalls int `json:"diskInvisibleCalls,omitempty"`
	// Denied are operations, as Calls names them ("iam.projects.serviceAccounts.get"), answered 403 with reason
	// forbidden, as Google answers a caller without the permission they need.
	Denied []string `json:"denied,omitempty"`
	// Seed seeds the choice of the calls that fail (0: a fixed seed).
	Seed uint64 `json:"seed,omitempty"`
}

// SetFaults sets the fault injection; the zero Faults turns it off.
func (s *Server) SetFaults(f Faults) error {
	if f.RateLimitRate < 0 || f.RateLimitRate > 1 || f.ServerErrorRate < 0 || f.ServerErrorRate > 1 || f.RateLimitRate+f.ServerErrorRate > 1 {
		return fmt.Errorf("faults: rateLimitRate %v and serverErrorRate %v must be shares between 0 and 1, together at most 1",
			f.RateLimitRate, f.ServerErrorRate)
	}
	if f.LatencyMillis < 0 || f.SlowOperations < 0 || f.DiskInvisibleCalls < 0 {
		return fmt.Errorf("faults: latencyMillis, slowOperations and diskInvisibleCalls cannot be negative")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	seed := f.Seed
	if seed == 0 {
		seed = 1
	}
	s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return nil
}

// fault decides the fate of one API call: its latency, and the error it is answered with (nil: none). Call it
// with s.mu held.
func (s *Server) fault() (time.Duration, *Error) {
	f := s.faults
	latency := time.Duration(f.LatencyMillis) * time.Millisecond
	switch p := s.rng.Float64(); {
	case p < f.RateLimitRate:
		return latency, &Error{Code: http.StatusTooManyRequests, Reason: "rateLimitExceeded",
			Message: "Rate Limit Exceeded (fakegce: injected)"}
	case p < f.RateLimitRate+f.ServerErrorRate:
		return latency, &Error{Code: http.StatusServiceUnavailable, Reason: "backendError",
			Message: "Internal error. Please try again or contact Google Support. (fakegce: injected)"}
	}
	return latency, nil
}
