package fakeaws

import (
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// startFakeAWS serves a new Server on a test HTTP server; it is closed when t ends.
func startFakeAWS(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	s := New()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// testAWSConfig is an SDK configuration for the fake at endpoint: static credentials, us-east-1, one attempt (a
// test that wants the SDK's retries sets its own).
func testAWSConfig(endpoint string) aws.Config {
	return aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption},
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint:     aws.String(endpoint),
		RetryMaxAttempts: 1,
	}
}
