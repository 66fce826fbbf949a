package awstasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

// InstanceIdentity asks the instance metadata service (IMDSv2: a session token first, never the unauthenticated
// v1) who this instance is: me is its id and its private address (local-ipv4) and public one (public-ipv4, ""
// when it has none), zone its availability zone, region its region. cfg's HTTP client and retries are used; the
// service's address is the SDK's (AWS_EC2_METADATA_SERVICE_ENDPOINT points it at another, such as
// internal/fakeaws), and cfg needs no region.
func InstanceIdentity(ctx context.Context, cfg aws.Config) (me volumetasks.Holder, zone, region string, err error) {
	c := imds.NewFromConfig(cfg, func(o *imds.Options) { o.EnableFallback = aws.FalseTernary })
	get := func(path string, optional bool) (string, error) {
		out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
		if err != nil {
			var re *smithyhttp.ResponseError
			if optional && errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
				return "", nil
			}
			return "", fmt.Errorf("reading this instance's %s from the EC2 instance metadata service (IMDSv2; not on EC2? AWS_EC2_METADATA_SERVICE_ENDPOINT names another): %w", path, err)
		}
		defer out.Content.Close()
		b, err := io.ReadAll(out.Content)
		if err != nil {
			return "", fmt.Errorf("reading this instance's %s from the EC2 instance metadata service: %w", path, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	var id, local, public string
	for _, m := range []struct {
		path     string
		optional bool
		to       *string
	}{
		{"instance-id", false, &id},
		{"placement/availability-zone", false, &zone},
		{"placement/region", true, &region},
		{"local-ipv4", false, &local},
		{"public-ipv4", true, &public},
	} {
		if *m.to, err = get(m.path, m.optional); err != nil {
			return volumetasks.Holder{}, "", "", err
		}
	}
	if region == "" && len(zone) > 1 {
		region = zone[:len(zone)-1] // us-east-1a is in us-east-1
	}
	for _, a := range []struct{ name, value string }{{"local-ipv4", local}, {"public-ipv4", public}} {
		if ip, err := netip.ParseAddr(a.value); a.value != "" && (err != nil || !ip.Is4()) {
			return volumetasks.Holder{}, "", "", fmt.Errorf("the EC2 instance metadata service says this instance's %s is %q: not an IPv4 address", a.name, a.value)
		}
	}
	if id == "" || zone == "" || local == "" {
		return volumetasks.Holder{}, "", "", fmt.Errorf("the EC2 instance metadata service left out this instance's id (%q), zone (%q) or address (%q)", id, zone, local)
	}
	return volumetasks.Holder{NodeID: id, InternalIP: local, ExternalIP: public}, zone, region, nil
}
