package fakeaws

import "net/http"

// STUB (the Route53/IAM/IMDS helper replaces this file).

type route53State struct{}

func (s *Server) initRoute53() {}

// route53Operation names the Route53 operation of a request (ChangeResourceRecordSets, ListResourceRecordSets...).
func route53Operation(r *http.Request) string { return "Route53" }

// serveRoute53 answers one Route53 request with s.mu held.
func (s *Server) serveRoute53(w http.ResponseWriter, r *http.Request) {
	writeError(w, svcRoute53, errorf("InvalidAction", "fakeaws: Route53 is not implemented"))
}
