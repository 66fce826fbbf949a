package gcetasks

import (
	"errors"
	"net/http"
	"testing"

	"google.golang.org/api/googleapi"

	"kubeup.dev/kubeup/engine"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		code   int
		reason string
		class  engine.Class
		denied bool
	}{
		{http.StatusTooManyRequests, "rateLimitExceeded", engine.ClassRetryable, false},
		{http.StatusForbidden, "userRateLimitExceeded", engine.ClassRetryable, false},
		{http.StatusServiceUnavailable, "backendError", engine.ClassRetryable, false},
		{http.StatusForbidden, "forbidden", engine.ClassTerminal, true},
		{http.StatusBadRequest, "invalid", engine.ClassTerminal, false},
	} {
		err := Classify("doing", &googleapi.Error{Code: tc.code, Message: "m", Errors: []googleapi.ErrorItem{{Reason: tc.reason}}})
		if engine.ClassOf(err) != tc.class || errors.Is(err, engine.ErrAccessDenied) != tc.denied {
			t.Errorf("%d %s: %v (class %v), want %v, denied %t", tc.code, tc.reason, err, engine.ClassOf(err), tc.class, tc.denied)
		}
	}
	if got := Classify("creating disk d", &googleapi.Error{Code: 400, Message: "bad size", Errors: []googleapi.ErrorItem{{Reason: "invalid"}}}).Error(); got != "creating disk d: Google said 400 invalid: bad size" {
		t.Errorf("message: %q", got)
	}
}
