package fakegce

import (
	"fmt"
	"net/http"
	"time"

	"kubeup.dev/kubeup/internal/fakecontrol"
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
	if err := fakecontrol.CheckShares("rateLimitRate", f.RateLimitRate, f.ServerErrorRate); err != nil {
		return err
	}
	if f.LatencyMillis < 0 || f.SlowOperations < 0 || f.DiskInvisibleCalls < 0 {
		return fmt.Errorf("faults: latencyMillis, slowOperations and diskInvisibleCalls cannot be negative")
	}
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
	s.ctl.SetRates(fakecontrol.Rates{Throttle: f.RateLimitRate, ServerError: f.ServerErrorRate,
		Latency: time.Duration(f.LatencyMillis) * time.Millisecond, Seed: f.Seed})
	return nil
}

// faultError is the answer to a call the fault injection fails.
func faultError(fate fakecontrol.Fate) *Error {
	if fate == fakecontrol.Throttle {
		return &Error{Code: http.StatusTooManyRequests, Reason: "rateLimitExceeded", Message: "Rate Limit Exceeded (fakegce: injected)"}
	}
	return &Error{Code: http.StatusServiceUnavailable, Reason: "backendError",
		Message: "Internal error. Please try again or contact Google Support. (fakegce: injected)"}
}
