package awstasks

import (
	"context"
	"fmt"
	"slices"
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
	return c.reads.images.Of(spec).Get(ctx, func(ctx context.Context) (ec2types.Image, error) {
		var in ec2.DescribeImagesInput
		pattern := spec
		if strings.HasPrefix(spec, "ami-") {
			in.ImageIds = []string{spec}
		} else {
			pattern = imageNamePattern(spec)
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

// runningImages returns the images that the default versions of the cluster's launch templates run, by id: one
// DescribeImages for all of them per run. An image that is gone (deregistered) is absent.
func (c *Cloud) runningImages(ctx context.Context) (map[string]ec2types.Image, error) {
	return c.reads.running.Get(ctx, func(ctx context.Context) (map[string]ec2types.Image, error) {
		templates, err := c.launchTemplates(ctx)
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, r := range templates {
			if r.def != nil && r.def.LaunchTemplateData != nil && r.def.LaunchTemplateData.ImageId != nil &&
				!slices.Contains(ids, *r.def.LaunchTemplateData.ImageId) {
				ids = append(ids, *r.def.LaunchTemplateData.ImageId)
			}
		}
		out := map[string]ec2types.Image{}
		if len(ids) == 0 {
			return out, nil
		}
		slices.Sort(ids)
		p := ec2.NewDescribeImagesPaginator(c.EC2, &ec2.DescribeImagesInput{ImageIds: ids})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if ErrorCode(err) == "InvalidAMIID.NotFound" || ErrorCode(err) == "InvalidAMIID.Unavailable" {
				return map[string]ec2types.Image{}, nil // one is gone: none is kept, the patterns are looked up again
			}
			if err != nil {
				return nil, Classify("reading the images of the cluster's launch templates", err)
			}
			for _, im := range page.Images {
				out[aws.ToString(im.ImageId)] = im
			}
		}
		return out, nil
	})
}

// imageNamePattern is the name pattern spec stands for: a trailing "*" is implied when it has no wildcard.
func imageNamePattern(spec string) string {
	if !strings.ContainsAny(spec, "*?") {
		return spec + "*"
	}
	return spec
}

// globMatch reports whether name matches pattern as EC2's filters match: "*" is any run of characters, "?" any
// one character, everything else itself.
func globMatch(pattern, name string) bool {
	// The classic two-pointer match with backtracking to the last "*".
	p, n, star, mark := 0, 0, -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p, mark = star+1, mark+1
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
