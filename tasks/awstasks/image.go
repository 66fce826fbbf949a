package awstasks

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// imageOwners are the accounts whose images a name pattern is looked up in: the caller's own, Amazon's, and
// Debian's (136693071363).
var imageOwners = []string{"self", "amazon", "136693071363"}

// image returns the image spec names: an image id ("ami-...") as it is, or the newest available image (by
// CreationDate) whose name matches the pattern spec (a trailing "*" is added when it has no wildcard) among the
// images of imageOwners. One DescribeImages per spec and run.
func (c *Cloud) image(ctx context.Context, spec string) (ec2types.Image, error) {
	return c.reads.images.of(spec).get(ctx, func(ctx context.Context) (ec2types.Image, error) {
		var in ec2.DescribeImagesInput
		pattern := spec
		if strings.HasPrefix(spec, "ami-") {
			in.ImageIds = []string{spec}
		} else {
			if !strings.ContainsAny(pattern, "*?") {
				pattern += "*"
			}
			in.Owners = imageOwners
			in.Filters = []ec2types.Filter{
				{Name: aws.String("name"), Values: []string{pattern}},
				{Name: aws.String("state"), Values: []string{"available"}},
			}
		}
		var newest *ec2types.Image
		p := ec2.NewDescribeImagesPaginator(c.EC2, &in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if ErrorCode(err) == "InvalidAMIID.NotFound" || ErrorCode(err) == "InvalidAMIID.Unavailable" {
				break
			}
			if err != nil {
				return ec2types.Image{}, Classify("looking up image "+spec, err)
			}
			for i := range page.Images {
				im := &page.Images[i]
				// CreationDate is RFC 3339 in UTC ("2025-01-02T03:04:05.000Z"): its text sorts as its time.
				if newest == nil || aws.ToString(im.CreationDate) > aws.ToString(newest.CreationDate) {
					newest = im
				}
			}
		}
		if newest == nil {
			if in.ImageIds != nil {
				return ec2types.Image{}, engine.Terminal(fmt.Errorf("image %s does not exist in %s (or is not shared with this account): "+
					"name an image of the region", spec, c.Region))
			}
			return ec2types.Image{}, engine.Terminal(fmt.Errorf("no available image is named like %q in %s among the images of this "+
				"account, Amazon and Debian (136693071363): name an image id (ami-...) or another name pattern", pattern, c.Region))
		}
		return *newest, nil
	})
}
