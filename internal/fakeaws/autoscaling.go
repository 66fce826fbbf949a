package fakeaws

import "net/url"

// STUB (the EC2 helper replaces this file).

type asgState struct{}

func (s *Server) initASG() {}

// asgAction runs one Auto Scaling Query action of region with s.mu held.
func (s *Server) asgAction(region, action string, form url.Values) (any, error) {
	return nil, errorf("InvalidAction", "fakeaws: Auto Scaling action %s is not implemented", action)
}
