package fakeaws

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"kubeup.dev/kubeup/internal/fakecontrol"
)

// Faults is the fault injection of a Server: what share of calls fail and how, how slow calls are, and how
// eventually consistent EC2 is.
type Faults struct {
	// ThrottleRate is the share of calls (0 to 1) answered with the service's throttling error
	// (RequestLimitExceeded for EC2, Throttling for Auto Scaling, IAM and Route53, SlowDown for S3).
	ThrottleRate float64 `json:"throttleRate,omitempty"`
	// ServerErrorRate is the share of calls answered with a 500 InternalError.
	ServerErrorRate float64 `json:"serverErrorRate,omitempty"`
	// LatencyMillis delays every call by this many milliseconds.
	LatencyMillis int `json:"latencyMillis,omitempty"`
	// VolumeInvisibleCalls: a new volume is left out of this many DescribeVolumes answers after its creation.
	VolumeInvisibleCalls int `json:"volumeInvisibleCalls,omitempty"`
	// AttachingPolls: a new attachment is "attaching" in this many DescribeVolumes answers before "attached".
	AttachingPolls int `json:"attachingPolls,omitempty"`
	// GroupInvisibleCalls: a new security group is unknown to this many DescribeSecurityGroups and
	// AuthorizeSecurityGroupIngress calls after its creation (left out of lists, InvalidGroup.NotFound by id).
	GroupInvisibleCalls int `json:"groupInvisibleCalls,omitempty"`
	// TemplateInvisibleCalls: a new launch template is unknown to this many Auto Scaling calls that name it
	// (CreateAutoScalingGroup, UpdateAutoScalingGroup: ValidationError "... does not exist").
	TemplateInvisibleCalls int `json:"templateInvisibleCalls,omitempty"`
	// MaxConcurrent, when positive, refuses a call that arrives while this many calls of the account (of the
	// services below) are already being answered, with the service's throttling error, before doing any of its
	// work: an API that throttles above a concurrency, as AWS's token buckets do to a burst. A refused call is
	// not in flight itself, and is delayed by LatencyMillis like any other (the round trip).
	MaxConcurrent int `json:"maxConcurrent,omitempty"`
	// Services are the services the failures and latency apply to, by SigV4 name (ec2, autoscaling, iam,
	// route53, s3); empty: ec2, autoscaling, iam and route53 (not the state store's S3).
	Services []string `json:"services,omitempty"`
	// Seed seeds the choice of the calls that fail (0: a fixed seed).
	Seed uint64 `json:"seed,omitempty"`
}

// SetFaults sets the fault injection; the zero Faults turns it off.
func (s *Server) SetFaults(f Faults) error {
	if err := fakecontrol.CheckShares("throttleRate", f.ThrottleRate, f.ServerErrorRate); err != nil {
		return err
	}
	if f.LatencyMillis < 0 || f.VolumeInvisibleCalls < 0 || f.AttachingPolls < 0 || f.GroupInvisibleCalls < 0 || f.TemplateInvisibleCalls < 0 ||
		f.MaxConcurrent < 0 {
		return fmt.Errorf("faults: latencyMillis, volumeInvisibleCalls, attachingPolls, groupInvisibleCalls, templateInvisibleCalls " +
			"and maxConcurrent cannot be negative")
	}
	for _, svc := range f.Services {
		if !slices.Contains([]string{svcEC2, svcAutoScaling, svcIAM, svcRoute53, svcS3}, svc) {
			return fmt.Errorf("faults: services: %q is not one of ec2, autoscaling, iam, route53, s3", svc)
		}
	}
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
	services := slices.Clone(f.Services)
	s.ctl.SetRates(fakecontrol.Rates{Throttle: f.ThrottleRate, ServerError: f.ServerErrorRate,
		Latency: time.Duration(f.LatencyMillis) * time.Millisecond, MaxConcurrent: f.MaxConcurrent, Seed: f.Seed,
		Subject: func(service string) bool {
			if len(services) == 0 {
				return service != svcS3
			}
			return slices.Contains(services, service)
		}})
	return nil
}

// faultError is a service's answer to a call the fault injection fails.
func faultError(service string, fate fakecontrol.Fate) *Error {
	if fate == fakecontrol.ServerError {
		return &Error{Status: http.StatusInternalServerError, Code: "InternalError", Message: "fakeaws: an injected server error"}
	}
	switch service {
	case svcEC2:
		return &Error{Status: http.StatusServiceUnavailable, Code: "RequestLimitExceeded", Message: "Request limit exceeded."}
	case svcS3:
		return &Error{Status: http.StatusServiceUnavailable, Code: "SlowDown", Message: "Please reduce your request rate."}
	}
	return &Error{Status: http.StatusBadRequest, Code: "Throttling", Message: "Rate exceeded"}
}
