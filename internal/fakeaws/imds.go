package fakeaws

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// IMDSv2 under /latest/: PUT /latest/api/token for a session token, then GETs carrying it for the instance's
// metadata and identity document. The main address answers for the chosen instance (ChooseIMDSInstance, POST
// /__fake/imds-instance?id=), or the newest running one; IMDSHandler answers for one given instance. IMDS calls are
// neither counted nor subject to the fault injection: they are not API calls.

// Identity is what IMDS tells an instance of itself.
type Identity struct {
	InstanceID, Region, Zone, PrivateIP, PublicIP, ImageID, InstanceType string
	// UserData is the instance's user data (decoded); "" answers 404, as for an instance launched without.
	UserData string
}

const (
	imdsTokenHeader    = "X-Aws-Ec2-Metadata-Token"
	imdsTokenTTLHeader = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
	imdsTokenPrefix    = "fakeaws-imds-"
	imdsMaxTokenTTL    = 21600
)

// IMDSHandler answers IMDSv2 for instance id alone, whatever is chosen on the main address: serve it on a test
// server of its own to give each of several fake instances its IMDS. The instance need not exist yet: until it
// does, metadata requests answer 404.
func (s *Server) IMDSHandler(id string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/latest/") {
			http.Error(w, "fakeaws: IMDS serves /latest/ only", http.StatusNotFound)
			return
		}
		s.serveIMDS(w, r, id)
	})
}

// ChooseIMDSInstance makes the main address's IMDS answer for instance id; "" goes back to the newest running
// instance. An instance that does not exist is an error.
func (s *Server) ChooseIMDSInstance(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != "" {
		if _, ok := s.instanceIdentity(id); !ok {
			return fmt.Errorf("fakeaws: IMDS: no instance %s", id)
		}
	}
	s.imdsInstance = id
	return nil
}

// serveIMDS answers IMDSv2 for instance id ("": the chosen one, or the newest).
func (s *Server) serveIMDS(w http.ResponseWriter, r *http.Request, id string) {
	if r.URL.Path == "/latest/api/token" {
		if r.Method != http.MethodPut {
			http.Error(w, "fakeaws: IMDS: the token is asked for with PUT", http.StatusMethodNotAllowed)
			return
		}
		ttl, err := strconv.Atoi(r.Header.Get(imdsTokenTTLHeader))
		if err != nil || ttl < 1 || ttl > imdsMaxTokenTTL {
			http.Error(w, fmt.Sprintf("fakeaws: IMDS: %s must be between 1 and %d seconds", imdsTokenTTLHeader, imdsMaxTokenTTL), http.StatusBadRequest)
			return
		}
		w.Header().Set(imdsTokenTTLHeader, strconv.Itoa(ttl))
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s%d", imdsTokenPrefix, time.Now().Add(time.Duration(ttl)*time.Second).Unix())
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "fakeaws: IMDS: metadata is read with GET", http.StatusMethodNotAllowed)
		return
	}
	if !validIMDSToken(r.Header.Get(imdsTokenHeader)) {
		http.Error(w, "fakeaws: IMDS: a valid "+imdsTokenHeader+" is required (IMDSv2)", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	if id == "" {
		id = s.imdsInstance
	}
	me, ok := s.instanceIdentity(id)
	s.mu.Unlock()
	if !ok {
		what := "no running instance"
		if id != "" {
			what = "no such instance " + id
		}
		http.Error(w, "fakeaws: IMDS: "+what, http.StatusNotFound)
		return
	}
	body, ok := imdsAnswer(me, strings.TrimPrefix(r.URL.Path, "/latest/"))
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/document") {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain")
	}
	w.Write([]byte(body))
}

// validIMDSToken reports whether tok is one this fake issued and whose time has not run out.
func validIMDSToken(tok string) bool {
	rest, ok := strings.CutPrefix(tok, imdsTokenPrefix)
	if !ok {
		return false
	}
	expires, err := strconv.ParseInt(rest, 10, 64)
	return err == nil && time.Now().Unix() <= expires
}

// imdsAnswer is what IMDS answers at path (after /latest/) for instance me; false: 404.
func imdsAnswer(me Identity, path string) (string, bool) {
	hostname := "ip-" + strings.ReplaceAll(me.PrivateIP, ".", "-") + ".ec2.internal"
	meta := map[string]string{
		"instance-id":                 me.InstanceID,
		"ami-id":                      me.ImageID,
		"instance-type":               me.InstanceType,
		"local-ipv4":                  me.PrivateIP,
		"local-hostname":              hostname,
		"hostname":                    hostname,
		"placement/availability-zone": me.Zone,
		"placement/region":            me.Region,
		"public-ipv4":                 me.PublicIP,
		"services/domain":             "amazonaws.com",
		"services/partition":          "aws",
	}
	switch {
	case path == "meta-data" || path == "meta-data/":
		return "ami-id\nhostname\ninstance-id\ninstance-type\nlocal-hostname\nlocal-ipv4\nplacement/\n" +
			map[bool]string{true: "public-ipv4\n", false: ""}[me.PublicIP != ""] + "services/", true
	case path == "meta-data/placement" || path == "meta-data/placement/":
		return "availability-zone\nregion", true
	case strings.HasPrefix(path, "meta-data/"):
		v := meta[strings.TrimPrefix(path, "meta-data/")]
		return v, v != ""
	case path == "dynamic/instance-identity/document":
		doc, err := json.MarshalIndent(map[string]any{
			"accountId":        AccountID,
			"architecture":     "x86_64",
			"availabilityZone": me.Zone,
			"imageId":          me.ImageID,
			"instanceId":       me.InstanceID,
			"instanceType":     me.InstanceType,
			"pendingTime":      "2026-01-01T00:00:00Z",
			"privateIp":        me.PrivateIP,
			"region":           me.Region,
			"version":          "2017-09-30",
		}, "", "  ")
		return string(doc), err == nil
	case path == "user-data":
		return me.UserData, me.UserData != ""
	}
	return "", false
}
