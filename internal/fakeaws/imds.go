package fakeaws

import "net/http"

// STUB (the Route53/IAM/IMDS helper replaces this file).

// Identity is what IMDS tells an instance of itself.
type Identity struct {
	InstanceID, Region, Zone, PrivateIP, PublicIP, ImageID, InstanceType string
}

// serveIMDS answers IMDSv2 for instance id ("": the chosen one, or the newest).
func (s *Server) serveIMDS(w http.ResponseWriter, r *http.Request, id string) {
	http.Error(w, "fakeaws: IMDS is not implemented", http.StatusNotFound)
}

// ChooseIMDSInstance makes the main address's IMDS answer for instance id.
func (s *Server) ChooseIMDSInstance(id string) error { return nil }
