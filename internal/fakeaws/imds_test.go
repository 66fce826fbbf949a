package fakeaws

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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

// TestIMDSWithSDK asks the SDK's IMDS client about fake instances: the newest on the main address, the chosen
// one (in Go and through the control endpoint), and each instance on an IMDSHandler of its own.
func TestIMDSWithSDK(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fake(t)
	_, subnets := f.network(t, "us-east-1a", "us-east-1b")
	lt := f.template(t, "nodes.c", "#!/bin/sh\necho hello\n")
	i1, i2 := f.runInstance(t, lt, subnets[0]), f.runInstance(t, lt, subnets[1])
	main := httptest.NewServer(f.s)
	t.Cleanup(main.Close)
	client := func(endpoint string) *imds.Client { return imds.New(imds.Options{Endpoint: endpoint}) }

	// whoami is what the SDK learns of the instance behind endpoint: "id zone region private-ip".
	whoami := func(endpoint string) string {
		t.Helper()
		c := client(endpoint)
		doc, err := c.GetInstanceIdentityDocument(ctx, &imds.GetInstanceIdentityDocumentInput{})
		if err != nil {
			t.Fatalf("GetInstanceIdentityDocument: %v", err)
		}
		zone, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: "placement/availability-zone"})
		if err != nil {
			t.Fatalf("GetMetadata(placement/availability-zone): %v", err)
		}
		defer zone.Content.Close()
		z, _ := io.ReadAll(zone.Content)
		region, err := c.GetRegion(ctx, &imds.GetRegionInput{})
		if err != nil {
			t.Fatalf("GetRegion: %v", err)
		}
		if doc.AvailabilityZone != string(z) || doc.AccountID != AccountID || doc.ImageID == "" || doc.InstanceType != "t3.medium" {
			t.Errorf("identity document %+v, zone %s", doc.InstanceIdentityDocument, z)
		}
		return strings.Join([]string{doc.InstanceID, doc.AvailabilityZone, region.Region, doc.PrivateIP}, " ")
	}
	me := func(i types.Instance) string {
		return strings.Join([]string{aws.ToString(i.InstanceId), aws.ToString(i.Placement.AvailabilityZone), "us-east-1", aws.ToString(i.PrivateIpAddress)}, " ")
	}

	if got, want := whoami(main.URL), me(i2); got != want {
		t.Errorf("the main address without a choice: %s, want the newest instance %s", got, want)
	}
	if err := f.s.ChooseIMDSInstance(aws.ToString(i1.InstanceId)); err != nil {
		t.Fatal(err)
	}
	if got, want := whoami(main.URL), me(i1); got != want {
		t.Errorf("the main address after ChooseIMDSInstance: %s, want %s", got, want)
	}
	if code, body := control(t, main.URL, "POST", "/__fake/imds-instance?id="+aws.ToString(i2.InstanceId), ""); code != http.StatusNoContent {
		t.Fatalf("POST /__fake/imds-instance: %d %s", code, body)
	}
	if got, want := whoami(main.URL), me(i2); got != want {
		t.Errorf("the main address after POST /__fake/imds-instance: %s, want %s", got, want)
	}
	for _, i := range []types.Instance{i1, i2} {
		own := httptest.NewServer(f.s.IMDSHandler(aws.ToString(i.InstanceId)))
		t.Cleanup(own.Close)
		if got, want := whoami(own.URL), me(i); got != want {
			t.Errorf("IMDSHandler(%s): %s, want %s", aws.ToString(i.InstanceId), got, want)
		}
	}

	ud, err := client(main.URL).GetUserData(ctx, &imds.GetUserDataInput{})
	if err != nil {
		t.Fatalf("GetUserData: %v", err)
	}
	defer ud.Content.Close()
	if b, _ := io.ReadAll(ud.Content); string(b) != "#!/bin/sh\necho hello\n" {
		t.Errorf("user data %q", b)
	}
	// IMDS is not counted: only the fixture's EC2 calls are.
	if diff := cmp.Diff(map[string]int{"CreateVpc": 1, "CreateSubnet": 2, "DescribeImages": 1, "CreateLaunchTemplate": 1, "RunInstances": 2}, f.s.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}

	// A terminated instance has no IMDS.
	if _, err := f.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(i2.InstanceId)}}); err != nil {
		t.Fatal(err)
	}
	_, err = client(main.URL).GetMetadata(ctx, &imds.GetMetadataInput{Path: "instance-id"})
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotFound {
		t.Errorf("IMDS of a terminated instance: %v; want 404", err)
	}
}
