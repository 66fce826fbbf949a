package awstasks

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Tags: a task's Tags are the tags it asks for. kubeup adds Name=<the task's name> and the cluster's ownership
// tag to everything it makes, whether the task asks for them or not. It manages the keys a task asks for, and
// removes a key the task no longer asks for only when it is in kubeup's exact managed set (managedKey): the
// k8s.io/role/ and k8s.io/etcd/ keys the model sets, and kubeup.dev/ keys. Every other tag is left alone and never
// reported: aws:*, tags an operator or another tool added, and other keys under k8s.io/ (such as the
// k8s.io/cluster-autoscaler/ keys an operator sets on an Auto Scaling group for the cluster autoscaler).

// managedPrefixes are the tag key prefixes kubeup owns on the resources it makes. Name and the ownership tag
// are always among the tags kubeup sets, so they are never removed either.
var managedPrefixes = []string{"k8s.io/role/", "k8s.io/etcd/", "kubeup.dev/"}

// managedKey reports whether kubeup removes key from a resource it made when the task no longer asks for it.
// FormatIntentTag is not: protokube puts it on a volume and removes it (Volumes.BeginFormat, EndFormat), and
// kubeup update must neither show it as a change nor remove it while a node formats the volume.
func managedKey(key string) bool {
	if key == FormatIntentTag {
		return false
	}
	for _, p := range managedPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// tagsOf turns EC2 tags into a map; nil when there are none.
func tagsOf(tags []ec2types.Tag) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// asgTags turns an Auto Scaling group's tags into a map; nil when there are none.
func asgTags(tags []asgtypes.TagDescription) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// ec2Tags turns a map into EC2 tags, sorted by key.
func ec2Tags(m map[string]string) []ec2types.Tag {
	tags := make([]ec2types.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return tags
}

// tagSpec is the TagSpecification of a create call.
func tagSpec(rt ec2types.ResourceType, m map[string]string) ec2types.TagSpecification {
	return ec2types.TagSpecification{ResourceType: rt, Tags: ec2Tags(m)}
}

// desiredTags are the tags a resource named name gets: the task's, Name and the cluster's ownership tag.
func (c *Cloud) desiredTags(name string, tags map[string]string) map[string]string {
	out := make(map[string]string, len(tags)+2)
	out["Name"] = name
	maps.Copy(out, tags)
	out[ClusterTag(c.Cluster)] = ownedValue
	return out
}

// tagView is what Find reports of a resource's tags to a task that asks for want: the keys it asks for and the
// managed keys (managedKey); Name and the ownership tag only when it asks for them. nil when empty.
func (c *Cloud) tagView(actual, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range actual {
		_, asked := want[k]
		if asked || managedKey(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// tagChanges returns what makes a resource's tags actual hold desired: the tags to set (new or changed) and the
// keys to remove (the managed keys, managedKey, that desired does not hold; never any other).
func tagChanges(actual, desired map[string]string) (set map[string]string, remove []string) {
	set = map[string]string{}
	for k, v := range desired {
		if old, ok := actual[k]; !ok || old != v {
			set[k] = v
		}
	}
	for k := range actual {
		if _, ok := desired[k]; !ok && managedKey(k) {
			remove = append(remove, k)
		}
	}
	slices.Sort(remove)
	return set, remove
}

// retag makes the tags of EC2 resource id (a volume, a security group, a launch template) hold desired, with
// CreateTags and DeleteTags; what names the resource in errors ("EBS volume a.etcd-main.x").
func (c *Cloud) retag(ctx context.Context, id, what string, actual, desired map[string]string) error {
	set, remove := tagChanges(actual, desired)
	if len(set) > 0 {
		if _, err := c.EC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(set)}); err != nil {
			return Classify("tagging "+what, err)
		}
	}
	if len(remove) > 0 {
		tags := make([]ec2types.Tag, len(remove))
		for i, k := range remove {
			tags[i] = ec2types.Tag{Key: aws.String(k)}
		}
		if _, err := c.EC2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: tags}); err != nil {
			return Classify("removing tags from "+what, err)
		}
	}
	return nil
}
