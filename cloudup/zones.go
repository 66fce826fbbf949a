package cloudup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
)

// zoneCheckWait bounds how long CheckZones waits for the cloud's answer.
const zoneCheckWait = 20 * time.Second

// CheckZones checks the zones of a complete, valid spec (source names it in errors) against its cloud, where
// one can be asked: on aws, each of spec.zones must be a zone EC2 lists in spec.region (DescribeAvailabilityZones),
// else the error (a model.InvalidError) says "spec.zones[N]: "us-east-1x" is not a zone of region us-east-1 (its
// zones: ...)". When the cloud cannot be asked (no credentials, no network, access denied), the zones are not
// checked: the warning says so and why (an update still fails on such a zone: its subnet is not in it). Other
// clouds' zones are not checked here (warning and error nil).
func CheckZones(ctx context.Context, source string, c *model.Cluster) (warning string, err error) {
	if c.Spec.CloudProvider != model.CloudAWS {
		return "", nil
	}
	region := c.Spec.Region
	notChecked := func(err error) string {
		return fmt.Sprintf("spec.zones were not checked against the zones AWS has in region %s (%v): `kubeup update cluster` "+
			"fails on a zone that is not one of them (its subnet in spec.aws.subnets cannot be in it)", region, err)
	}
	cfg, err := awstasks.LoadConfig(ctx, region)
	if err != nil {
		return notChecked(err), nil
	}
	ctx, cancel := context.WithTimeout(ctx, zoneCheckWait)
	defer cancel()
	zones, err := awstasks.RegionZones(ctx, cfg)
	if err != nil {
		return notChecked(err), nil
	}
	var problems []model.Problem
	for i, z := range c.Spec.Zones {
		if !slices.Contains(zones, z) {
			problems = append(problems, model.Problem{Path: fmt.Sprintf("spec.zones[%d]", i),
				Message: fmt.Sprintf("%s is not a zone of region %s (its zones: %s): name zones of region %s (kubeup create cluster --zones)",
					model.Echo(z), region, strings.Join(zones, ", "), region)})
		}
	}
	if len(problems) > 0 {
		return "", &model.InvalidError{Source: source, Problems: problems}
	}
	return "", nil
}
