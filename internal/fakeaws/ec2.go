package fakeaws

import "net/url"

// STUB (the EC2 helper replaces this file).

type ec2State struct{}

func (s *Server) initEC2() {}

// ec2Action runs one EC2 Query action of region with s.mu held.
func (s *Server) ec2Action(region, action string, form url.Values) (any, error) {
	return nil, errorf("InvalidAction", "fakeaws: EC2 action %s is not implemented", action)
}

// instanceIdentity is what IMDS says of instance id; false when there is no such instance. With id "", the
// newest running instance. Call it with s.mu held.
func (s *Server) instanceIdentity(id string) (Identity, bool) { return Identity{}, false }
