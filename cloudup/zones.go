package cloudup

import (
	"context"
	"fmt"
	"slices"
	"time"

	"kubeup.dev/kubeup/model"
)

// zoneCheckWait bounds how long CheckZones waits for the cloud's answer.
const zoneCheckWait = 20 * time.Second

// CheckZones checks the zones of a complete, valid spec (source names it in errors) against its cloud, as its
// provider's Zones lists them: on aws, each of spec.zones must be a zone EC2 lists in spec.region
// (DescribeAvailabilityZones), else the error (a model.InvalidError) says `spec.zones[N]: "us-east-1x" is not a
// zone of region us-east-1 (its zones: ...)`; on gce, a zone compute's zones.list has in spec.project (`... is not
// a zone of project P (its zones in region R: ...)`). When the cloud cannot be asked (no credentials, no network,
// access denied), the zones are not checked: the warning says so and why (an update still fails on such a zone).
// The zones of a cloud whose provider does not check them (local), or that this kubeup has no provider for, are
// not checked (warning and error nil).
func CheckZones(ctx context.Context, source string, c *model.Cluster) (warning string, err error) {
	ctx, cancel := context.WithTimeout(ctx, zoneCheckWait)
	defer cancel()
	p := providers[c.Spec.CloudProvider]
	if p == nil {
		return "", nil
	}
	where, have, err := p.Zones(ctx, &c.Spec)
	if where == "" {
		return "", nil
	}
	if err != nil {
		return fmt.Sprintf("spec.zones were not checked against the zones of %s (%v): `kubeup update cluster` fails on a zone "+
			"that is not one of them", where, err), nil
	}
	var problems []model.Problem
	for i, z := range c.Spec.Zones {
		if slices.Contains(have, z) {
			continue
		}
		theirs := p.ZonesNear(z, have)
		problems = append(problems, model.Problem{Path: fmt.Sprintf("spec.zones[%d]", i),
			Message: fmt.Sprintf("%s is not a zone of %s (%s): name zones of %s (kubeup create cluster --zones)", model.Echo(z), where, theirs, where)})
	}
	if len(problems) > 0 {
		return "", &model.InvalidError{Source: source, Problems: problems}
	}
	return "", nil
}
