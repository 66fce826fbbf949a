package fakeaws

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// imdsDo sends h one request and returns its status, body and header.
func imdsDo(t *testing.T, h http.Handler, method, path string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(body), w.Result().Header
}

func TestIMDSToken(t *testing.T) {
	s := New()
	if code, _, _ := imdsDo(t, s, "PUT", "/latest/api/token", nil); code != http.StatusBadRequest {
		t.Errorf("a token without a TTL: %d, want 400", code)
	}
	if code, _, _ := imdsDo(t, s, "PUT", "/latest/api/token", map[string]string{imdsTokenTTLHeader: "21601"}); code != http.StatusBadRequest {
		t.Errorf("a token for longer than 6 hours: %d, want 400", code)
	}
	if code, _, _ := imdsDo(t, s, "GET", "/latest/api/token", map[string]string{imdsTokenTTLHeader: "60"}); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of a token: %d, want 405", code)
	}
	code, token, h := imdsDo(t, s, "PUT", "/latest/api/token", map[string]string{imdsTokenTTLHeader: "60"})
	if code != http.StatusOK || token == "" || h.Get(imdsTokenTTLHeader) != "60" {
		t.Fatalf("PUT /latest/api/token: %d %q, TTL %q", code, token, h.Get(imdsTokenTTLHeader))
	}
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"", http.StatusUnauthorized},
		{"forged", http.StatusUnauthorized},
		{imdsTokenPrefix + "1", http.StatusUnauthorized}, // ran out in 1970
		{token, http.StatusNotFound},                     // no instance yet
	} {
		code, body, _ := imdsDo(t, s, "GET", "/latest/meta-data/instance-id", map[string]string{imdsTokenHeader: tc.token})
		if code != tc.want {
			t.Errorf("GET instance-id with token %q: %d %s, want %d", tc.token, code, body, tc.want)
		}
	}
	if err := s.ChooseIMDSInstance("i-nosuch"); err == nil {
		t.Error("ChooseIMDSInstance of no instance: no error")
	}
	if code, body, _ := imdsDo(t, s.IMDSHandler("i-nosuch"), "GET", "/latest/meta-data/instance-id", map[string]string{imdsTokenHeader: token}); code != http.StatusNotFound || !strings.Contains(body, "no such instance i-nosuch") {
		t.Errorf("IMDSHandler of no instance: %d %s; want 404 no such instance", code, body)
	}
	if calls := s.Calls(); len(calls) != 0 {
		t.Errorf("IMDS calls counted as API calls: %v", calls)
	}
}

func TestIMDSAnswer(t *testing.T) {
	me := Identity{InstanceID: "i-0123", Region: "us-east-1", Zone: "us-east-1b", PrivateIP: "10.0.1.5", ImageID: "ami-1", InstanceType: "t3.medium"}
	for path, want := range map[string]string{
		"meta-data/instance-id":                 "i-0123",
		"meta-data/placement/availability-zone": "us-east-1b",
		"meta-data/placement/region":            "us-east-1",
		"meta-data/local-ipv4":                  "10.0.1.5",
		"meta-data/local-hostname":              "ip-10-0-1-5.ec2.internal",
		"meta-data/ami-id":                      "ami-1",
		"meta-data/instance-type":               "t3.medium",
	} {
		if got, ok := imdsAnswer(me, path); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", path, got, ok, want)
		}
	}
	for _, path := range []string{"meta-data/public-ipv4", "user-data", "meta-data/nothing", "nothing"} {
		if got, ok := imdsAnswer(me, path); ok {
			t.Errorf("%s: %q, want 404", path, got)
		}
	}
	me.PublicIP, me.UserData = "203.0.113.7", "#!/bin/sh\n"
	if got, _ := imdsAnswer(me, "meta-data/public-ipv4"); got != me.PublicIP {
		t.Errorf("public-ipv4: %q", got)
	}
	if got, _ := imdsAnswer(me, "user-data"); got != me.UserData {
		t.Errorf("user-data: %q", got)
	}
	doc, ok := imdsAnswer(me, "dynamic/instance-identity/document")
	var got map[string]any
	if err := json.Unmarshal([]byte(doc), &got); !ok || err != nil {
		t.Fatalf("identity document %q: %v", doc, err)
	}
	for k, want := range map[string]string{"instanceId": "i-0123", "region": "us-east-1", "availabilityZone": "us-east-1b",
		"privateIp": "10.0.1.5", "imageId": "ami-1", "instanceType": "t3.medium", "accountId": AccountID} {
		if diff := cmp.Diff(want, got[k]); diff != "" {
			t.Errorf("identity document's %s (-want +got):\n%s", k, diff)
		}
	}
}
