package awstasks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

// FormatIntentTag is the tag a node puts on an EBS volume before it formats it, and removes once the filesystem is
// made and before it mounts it; its value is the instance id of the node. A volume that carries it was never
// mounted since: what an interrupted mkfs left on it is formatted again by whichever instance holds it next
// (volumetasks.FormatIntents).
const FormatIntentTag = "kubeup.dev/format-intent"

// unnamedNode is what FormatIntent answers for an intent tag whose value is empty (not one kubeup wrote): an
// intent all the same.
const unnamedNode = "(unnamed node)"

var _ volumetasks.FormatIntents = (*Volumes)(nil)

// FormatIntent returns the instance id FormatIntentTag names on volume id, "" when the volume does not carry the
// tag. It asks EC2 (one DescribeVolumes of the volume) rather than use what List read: FormatAndMount asks only
// on the rare path of a device that is neither mounted nor blank, the round's Attached has taken that read by
// then (see listed), and a retried FormatAndMount must see what EC2 says now. EC2 is eventually consistent: a tag
// just removed may still show for a while, which is why FormatAndMount also checks that the filesystem was never
// mounted before it formats again.
func (v *Volumes) FormatIntent(ctx context.Context, id string) (string, error) {
	vol, err := v.describe(ctx, id, fmt.Sprintf("reading tag %s of EBS volume %s", FormatIntentTag, id))
	if err != nil {
		return "", err
	}
	for _, t := range vol.Tags {
		if aws.ToString(t.Key) == FormatIntentTag {
			if node := aws.ToString(t.Value); node != "" {
				return node, nil
			}
			return unnamedNode, nil
		}
	}
	return "", nil
}

// BeginFormat tags volume id with FormatIntentTag=<this instance's id> (CreateTags, which replaces the value
// another instance left). The intent is durable once EC2 has acknowledged the call, that is when BeginFormat
// returns nil. It does not ask EC2 whether this instance holds the volume (FormatAndMount calls it only for a
// volume attached here): the intent is information for the next holder, never a claim.
func (v *Volumes) BeginFormat(ctx context.Context, id string) error {
	v.forget(id)
	_, err := v.client.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{id},
		Tags:      []types.Tag{{Key: aws.String(FormatIntentTag), Value: aws.String(v.me.NodeID)}},
	})
	return Classify(fmt.Sprintf("tagging EBS volume %s with %s=%s before formatting it (ec2:CreateTags)", id, FormatIntentTag, v.me.NodeID), err)
}

// EndFormat removes FormatIntentTag from volume id whatever its value (DeleteTags names the key only); a volume
// without the tag is left as it is (EC2 answers success).
func (v *Volumes) EndFormat(ctx context.Context, id string) error {
	v.forget(id)
	_, err := v.client.DeleteTags(ctx, &ec2.DeleteTagsInput{
		Resources: []string{id},
		Tags:      []types.Tag{{Key: aws.String(FormatIntentTag)}},
	})
	return Classify(fmt.Sprintf("removing tag %s from EBS volume %s once its filesystem is made (ec2:DeleteTags)", FormatIntentTag, id), err)
}
