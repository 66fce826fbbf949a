package fakeaws

import "net/url"

// STUB (the Route53/IAM/IMDS helper replaces this file).

type iamState struct{}

func (s *Server) initIAM() {}

// iamAction runs one IAM Query action with s.mu held.
func (s *Server) iamAction(action string, form url.Values) (any, error) {
	return nil, errorf("InvalidAction", "fakeaws: IAM action %s is not implemented", action)
}
