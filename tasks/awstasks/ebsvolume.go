package awstasks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// EBSVolume is an EBS volume the cluster owns, such as the one that holds an etcd member's data. It is found by
// its tags: the cluster's ownership tag and Name=<Name>. Its key is "EBSVolume/<Name>".
//
// A create carries a client token derived from the cluster and the name, so that a create repeated after a crash
// (the first one made the volume, its answer was lost) never makes a second volume.
type EBSVolume struct {
	// Name names the volume (its Name tag) and the task: "a.etcd-main.demo.example.com".
	Name string
	// Zone is the availability zone ("us-east-1a"). Required to create; cannot change.
	Zone *string
	// SizeGB is the size in GiB. Required to create; it may grow, never shrink.
	SizeGB *int32
	// VolumeType is the EBS type ("gp3", "io2", ...); it may change (ModifyVolume).
	VolumeType *string
	// IOPS and Throughput (MiB/s) are the provisioned performance of the types that take them; they may change.
	IOPS       *int32
	Throughput *int32
	// Encrypted and KMSKeyID (the key's id or ARN; nil: the account's default key) cannot change.
	Encrypted *bool
	KMSKeyID  *string
	// Tags are the tags the volume carries besides Name and the ownership tag, which kubeup always adds (see
	// the package's tag rules: keys under k8s.io/ and kubeup.dev/ that the task does not ask for are removed;
	// other keys are left alone).
	Tags map[string]string `kubeup:"nilempty"`

	// ID is the volume's id (output).
	ID *string `kubeup:"output"`

	rawTags map[string]string // every tag of the found volume
	// mismatches counts, by client token, the IdempotentParameterMismatch answers after which no volume of the
	// name was found (see parameterMismatch).
	mismatches map[string]int
}

var (
	_ engine.Resource[*EBSVolume, *Cloud] = (*EBSVolume)(nil)
	_ engine.Renderer[*EBSVolume, *Cloud] = (*EBSVolume)(nil)
	_ engine.Classed                      = (*EBSVolume)(nil)
)

func (e *EBSVolume) Key() engine.Key     { return engine.Key{Type: "EBSVolume", Name: e.Name} }
func (e *EBSVolume) Deps() []engine.Task { return nil }
func (e *EBSVolume) APIClass() string    { return "ec2" }

// Find looks the volume up in the cluster's volumes (one DescribeVolumes per run for all of them). Two volumes
// of one name are an error that names them: kubeup cannot tell which holds the data.
func (e *EBSVolume) Find(ctx context.Context, c *Cloud) (*EBSVolume, error) {
	all, err := c.volumes(ctx)
	if err != nil {
		return nil, err
	}
	var found []ec2types.Volume
	for _, v := range all[e.Name] {
		if v.State != ec2types.VolumeStateDeleting && v.State != ec2types.VolumeStateDeleted {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
	default:
		ids := make([]string, len(found))
		for i, v := range found {
			ids[i] = aws.ToString(v.VolumeId)
		}
		return nil, engine.Terminal(fmt.Errorf("%d EBS volumes are named %s and tagged %s=%s (%s): kubeup cannot tell which one "+
			"to keep; find the one that holds the data, and delete the others or remove their %s tag",
			len(found), e.Name, ClusterTag(c.Cluster), ownedValue, strings.Join(ids, ", "), ClusterTag(c.Cluster)))
	}
	v := found[0]
	raw := tagsOf(v.Tags)
	a := &EBSVolume{
		Name:       e.Name,
		Zone:       v.AvailabilityZone,
		SizeGB:     v.Size,
		VolumeType: aws.String(string(v.VolumeType)),
		IOPS:       v.Iops,
		Throughput: v.Throughput,
		Encrypted:  v.Encrypted,
		KMSKeyID:   kmsKeyAsAsked(v.KmsKeyId, e.KMSKeyID),
		Tags:       c.tagView(raw, e.Tags),
		ID:         v.VolumeId,
		rawTags:    raw,
	}
	return a, nil
}

// kmsKeyAsAsked is the volume's key (AWS reports its ARN) as the task names it: the key id the task asks for
// when the ARN is that key's, so that an id and its ARN compare equal.
func kmsKeyAsAsked(actual, want *string) *string {
	if actual == nil || want == nil || *actual == *want {
		return actual
	}
	if strings.HasSuffix(*actual, ":key/"+*want) {
		return want
	}
	return actual
}

// CheckChanges requires Zone and SizeGB to create, and refuses to move the volume to another zone, to change its
// encryption or key, or to shrink it.
func (e *EBSVolume) CheckChanges(actual, expected, changes *EBSVolume) error {
	if expected.Name == "" {
		return errors.New("field Name of an EBS volume is empty")
	}
	if expected.SizeGB != nil && *expected.SizeGB <= 0 {
		return fmt.Errorf("field SizeGB of EBS volume %s: %d is not a size: give a positive number of GiB", expected.Name, *expected.SizeGB)
	}
	if actual == nil {
		if expected.Zone == nil || *expected.Zone == "" {
			return fmt.Errorf("field Zone is required to create EBS volume %s", expected.Name)
		}
		if expected.SizeGB == nil {
			return fmt.Errorf("field SizeGB is required to create EBS volume %s", expected.Name)
		}
		return nil
	}
	id := aws.ToString(actual.ID)
	if changes.Zone != nil {
		return fmt.Errorf("field Zone of EBS volume %s (%s) cannot change from %s to %s: a volume stays in its availability zone; "+
			"keep zone %s, or move the data yourself (snapshot the volume, make a volume from the snapshot in %s, delete %s) and run again",
			expected.Name, id, aws.ToString(actual.Zone), *expected.Zone, aws.ToString(actual.Zone), *expected.Zone, id)
	}
	if changes.Encrypted != nil {
		return fmt.Errorf("field Encrypted of EBS volume %s (%s) cannot change from %t to %t: EBS does not encrypt or decrypt a volume in place; "+
			"keep encrypted: %t, or copy the data to a new volume yourself (snapshot, copy the snapshot with the encryption wanted, make "+
			"a volume of it, delete %s) and run again",
			expected.Name, id, aws.ToBool(actual.Encrypted), *expected.Encrypted, aws.ToBool(actual.Encrypted), id)
	}
	if changes.KMSKeyID != nil {
		return fmt.Errorf("field KMSKeyID of EBS volume %s (%s) cannot change from %s to %s: a volume keeps its key; "+
			"keep key %s, or copy the data to a volume encrypted with the new key yourself (snapshot, copy the snapshot with the "+
			"new key, make a volume of it, delete %s) and run again",
			expected.Name, id, valueOr(actual.KMSKeyID, "<none>"), *expected.KMSKeyID, valueOr(actual.KMSKeyID, "<none>"), id)
	}
	if changes.SizeGB != nil && actual.SizeGB != nil && *expected.SizeGB < *actual.SizeGB {
		return fmt.Errorf("field SizeGB of EBS volume %s (%s) cannot shrink from %d GiB to %d GiB: EBS volumes only grow; "+
			"set it to %d or more", expected.Name, id, *actual.SizeGB, *expected.SizeGB, *actual.SizeGB)
	}
	return nil
}

func valueOr(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}

// Render creates the volume with its tags, or changes its size, type and performance (one ModifyVolume) and its
// tags (CreateTags, DeleteTags).
func (e *EBSVolume) Render(ctx context.Context, c *Cloud, actual, expected, changes *EBSVolume) error {
	defer c.reads.volumes.Forget() // changed, or failed part way: a retry reads the volumes again
	what := "EBS volume " + expected.Name
	if actual == nil {
		return e.create(ctx, c, expected)
	}
	id := aws.ToString(actual.ID)
	if changes.SizeGB != nil || changes.VolumeType != nil || changes.IOPS != nil || changes.Throughput != nil {
		in := &ec2.ModifyVolumeInput{VolumeId: actual.ID, Size: changes.SizeGB, Iops: changes.IOPS, Throughput: changes.Throughput}
		if changes.VolumeType != nil {
			in.VolumeType = ec2types.VolumeType(*changes.VolumeType)
		}
		if _, err := c.EC2.ModifyVolume(ctx, in); err != nil {
			return Classify(fmt.Sprintf("modifying %s (%s)", what, id), err)
		}
		engine.Logger(ctx).Info("modified EBS volume", "id", id)
	}
	return c.retag(ctx, id, fmt.Sprintf("%s (%s)", what, id), actual.rawTags, c.desiredTags(expected.Name, expected.Tags))
}

func (e *EBSVolume) create(ctx context.Context, c *Cloud, expected *EBSVolume) error {
	what := "EBS volume " + expected.Name
	in := &ec2.CreateVolumeInput{
		AvailabilityZone:  expected.Zone,
		Size:              expected.SizeGB,
		Iops:              expected.IOPS,
		Throughput:        expected.Throughput,
		Encrypted:         expected.Encrypted,
		KmsKeyId:          expected.KMSKeyID,
		TagSpecifications: []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeVolume, c.desiredTags(expected.Name, expected.Tags))},
	}
	if expected.VolumeType != nil {
		in.VolumeType = ec2types.VolumeType(*expected.VolumeType)
	}
	for attempt := 0; attempt < maxTokenAttempts; attempt++ {
		in.ClientToken = aws.String(clientToken(attempt, "EBSVolume", c.Cluster, expected.Name))
		out, err := c.EC2.CreateVolume(ctx, in)
		if ErrorCode(err) == "IdempotentParameterMismatch" {
			if err := e.parameterMismatch(ctx, c, *in.ClientToken, err); err != nil {
				return err
			}
			engine.Logger(ctx).Info("the client token was used with other parameters by a volume that is gone; trying the next one",
				"token", *in.ClientToken)
			continue
		}
		if err != nil {
			return Classify("creating "+what, err)
		}
		ev := tokenEvidence{State: string(out.State), Created: aws.ToTime(out.CreateTime)}
		ev.ServerTime, _ = awsmiddleware.GetServerTime(out.ResultMetadata)
		verdict := judgeToken(ev, c.Cluster, expected.Name)
		if verdict == tokenRead {
			if ev.Read, err = readVolumeForToken(ctx, c, aws.ToString(out.VolumeId)); err != nil {
				return Classify(fmt.Sprintf("reading %s (%s), which its client token was answered with", what, aws.ToString(out.VolumeId)), err)
			}
			verdict = judgeToken(ev, c.Cluster, expected.Name)
		}
		if verdict == tokenStale {
			engine.Logger(ctx).Info("the client token belongs to a volume of an earlier life of the cluster that is gone; trying the next one",
				"volume", aws.ToString(out.VolumeId), "state", string(out.State))
			continue
		}
		expected.ID = out.VolumeId
		engine.Logger(ctx).Info("created EBS volume", "id", aws.ToString(out.VolumeId), "zone", aws.ToString(expected.Zone))
		return nil
	}
	return engine.Terminal(fmt.Errorf("creating %s: its first %d client tokens were all used by volumes that are gone (clusters of "+
		"this name deleted and made again): give the cluster another name, or wait a day for EC2 to forget the tokens",
		what, maxTokenAttempts))
}

// maxMismatchReads is how many IdempotentParameterMismatch answers, each followed by a read of the volumes that
// finds none of the name, make a client token's volume gone rather than not visible yet. The engine retries in
// between with growing delays (1s, 2s, 4s, 8s: more than EC2 takes to show a new volume).
const maxMismatchReads = 5

// parameterMismatch decides what an IdempotentParameterMismatch of a create with token means: an earlier create
// with the same token asked for other parameters.
//
//   - A volume of this name that the cluster owns exists: an earlier run made it (and stopped before the run's
//     end) and the spec has changed since. NotReady: the retry's Find reads the volumes again, finds it, and
//     changes it as the spec says.
//   - None is found: either that volume is not visible yet, or it is gone (a cluster of this name deleted and
//     made again with another spec). NotReady again, up to maxMismatchReads times; then it is taken for gone,
//     and parameterMismatch returns nil: the next token is the fix.
func (e *EBSVolume) parameterMismatch(ctx context.Context, c *Cloud, token string, mismatch error) error {
	c.reads.volumes.Forget()
	all, err := c.volumes(ctx)
	if err != nil {
		return err
	}
	for _, v := range all[e.Name] {
		if !deletedState(string(v.State)) {
			return engine.NotReady(fmt.Errorf("creating EBS volume %s: client token %s was used by an earlier create "+
				"with other parameters, which made %s: reading the volumes again to change it as the spec says: %w",
				e.Name, token, aws.ToString(v.VolumeId), mismatch))
		}
	}
	if e.mismatches == nil {
		e.mismatches = map[string]int{}
	}
	e.mismatches[token]++
	if n := e.mismatches[token]; n < maxMismatchReads {
		return engine.NotReady(fmt.Errorf("creating EBS volume %s: client token %s was used by an earlier create with other "+
			"parameters, and no volume of the name is listed (%d of %d looks): waiting for it to show, or to be sure it is gone: %w",
			e.Name, token, n, maxMismatchReads, mismatch))
	}
	return nil
}

// readVolumeForToken reads volume id again for judgeToken.
func readVolumeForToken(ctx context.Context, c *Cloud, id string) (*tokenReadResult, error) {
	out, err := c.EC2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
	if ErrorCode(err) == "InvalidVolume.NotFound" {
		return &tokenReadResult{}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, v := range out.Volumes {
		if aws.ToString(v.VolumeId) == id {
			return &tokenReadResult{Found: true, State: string(v.State), Tags: tagsOf(v.Tags)}, nil
		}
	}
	return &tokenReadResult{}, nil
}
