package awstasks

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// RegionZones returns the names of the availability zones of cfg's region that the account may use, sorted: what
// DescribeAvailabilityZones lists (the region's zones, and the local zones the account opted in to), whatever
// their state. It makes at most two attempts: a caller that cannot reach AWS learns it soon.
func RegionZones(ctx context.Context, cfg aws.Config) ([]string, error) {
	client := ec2.NewFromConfig(allservices.WithOwnedBodies(cfg), func(o *ec2.Options) { o.RetryMaxAttempts = 2 })
	out, err := client.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, Classify("listing the availability zones of region "+cfg.Region, err)
	}
	var zones []string
	for _, z := range out.AvailabilityZones {
		zones = append(zones, aws.ToString(z.ZoneName))
	}
	slices.Sort(zones)
	return zones, nil
}
