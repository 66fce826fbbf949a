package awstasks

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
)

// LaunchTemplate is an EC2 launch template the cluster owns: what the machines of one instance group boot
// (image, instance type, instance profile, security groups, root volume, tags, and the user data that runs
// nodeup). Its key is "LaunchTemplate/<Name>".
//
// A change makes a new version of the template and sets it as the default; Find compares the task with the
// default version. Version is the default version's number, which the Auto Scaling group launches: a change of
// the template is a change of the group too. The plan's note of a change that makes a version names it (see
// ChangeNote).
//
// An image name pattern does not move the template by itself: while the default version runs an available image
// whose name matches the pattern, Find reads it as the pattern, even when a newer image matches now (a new
// Debian release does not change every template on each update). The newest matching image is taken when the
// template changes for another reason (user data, instance type, ...) or the spec names another pattern or id.
//
// Every version asks for IMDSv2 (HttpTokens=required) and tags the instances and volumes it launches.
type LaunchTemplate struct {
	// Name is the template's name: "<instance group>.<cluster>".
	Name string
	// Image is an image id ("ami-..."), or a name pattern looked up among the images of this account, Amazon
	// and Debian: the newest match ("debian-12-amd64-*"; a trailing "*" is implied) when a version is made, the
	// image the default version runs while it still matches (see above). Required to create.
	Image *string
	// InstanceType is the EC2 instance type ("m6i.large"). Required to create.
	InstanceType *string
	// InstanceProfile is the IAM instance profile the machines run with.
	InstanceProfile *InstanceProfile
	// SecurityGroups are the machines' security groups, in any order.
	SecurityGroups []*SecurityGroup `kubeup:"set,nilempty"`
	// RootVolumeSizeGB and RootVolumeType set the root volume (nil: the image's).
	RootVolumeSizeGB *int32
	RootVolumeType   *string
	// Tags are the tags of the template, and of the instances and volumes it launches, besides Name and the
	// ownership tag (see the package's tag rules).
	Tags map[string]string `kubeup:"nilempty"`
	// UserData is the script the machines run at boot, as text (EC2 keeps it in base64; the plan shows the
	// text's line diff).
	UserData *string
	// MakeUserData, when set, makes UserData once the tasks in After are done (see Resolve).
	MakeUserData func() (string, error) `kubeup:"-"`
	// After are the tasks that must be done before MakeUserData runs (the node configuration it points to).
	After []engine.Task `kubeup:"-"`

	// ID is the template's id and Version the number of its default version (outputs). Find leaves Version
	// unset when the default version is not what the task says: a dry run then shows that the Auto Scaling
	// group will change too.
	ID      *string `kubeup:"output"`
	Version *int64  `kubeup:"output"`

	rawTags     map[string]string // the template's own tags
	dataDiffers bool              // the default version is not what the task says
	// found: the numbers of the default and the latest version (0: not known)
	defaultVersion, latestVersion int64
}

var (
	_ engine.Resource[*LaunchTemplate, *Cloud] = (*LaunchTemplate)(nil)
	_ engine.Renderer[*LaunchTemplate, *Cloud] = (*LaunchTemplate)(nil)
	_ engine.Resolver                          = (*LaunchTemplate)(nil)
	_ engine.Classed                           = (*LaunchTemplate)(nil)
	_ engine.Noter[*LaunchTemplate]            = (*LaunchTemplate)(nil)
)

func (t *LaunchTemplate) Key() engine.Key { return engine.Key{Type: "LaunchTemplate", Name: t.Name} }

func (t *LaunchTemplate) Deps() []engine.Task {
	var deps []engine.Task
	if t.InstanceProfile != nil {
		deps = append(deps, t.InstanceProfile)
	}
	for _, g := range t.SecurityGroups {
		deps = append(deps, g)
	}
	return append(deps, t.After...)
}

func (t *LaunchTemplate) APIClass() string { return "ec2" }

// Resolve sets UserData from MakeUserData, once the tasks of After are done.
func (t *LaunchTemplate) Resolve() error {
	if t.MakeUserData == nil {
		return nil
	}
	s, err := t.MakeUserData()
	if err != nil {
		return fmt.Errorf("making the user data of launch template %s: %w", t.Name, err)
	}
	t.UserData = &s
	return nil
}

// Find reads the template and its default version from the cluster's launch templates (one
// DescribeLaunchTemplates and one DescribeLaunchTemplateVersions per run for all of them, and one DescribeImages
// of the images they run), normalised as the task states it: the user data as text, an image pattern when the
// version runs an available image of a name the pattern matches, the security groups as the tasks whose ids the
// version holds.
func (t *LaunchTemplate) Find(ctx context.Context, c *Cloud) (*LaunchTemplate, error) {
	all, err := c.launchTemplates(ctx)
	if err != nil {
		return nil, err
	}
	r, ok := all[t.Name]
	pattern := t.Image != nil && !strings.HasPrefix(*t.Image, "ami-")
	keep := false // the version runs an image the pattern names, maybe not the newest: it stays
	if pattern && ok && r.def != nil && r.def.LaunchTemplateData != nil {
		running, err := c.runningImages(ctx)
		if err != nil {
			return nil, err
		}
		im, found := running[aws.ToString(r.def.LaunchTemplateData.ImageId)]
		keep = found && im.State == ec2types.ImageStateAvailable && globMatch(imageNamePattern(*t.Image), aws.ToString(im.Name))
	}
	var imageID string
	if pattern && !keep {
		im, err := c.image(ctx, *t.Image) // looked up in a dry run too: a pattern that matches nothing fails early
		if err != nil {
			return nil, err
		}
		imageID = aws.ToString(im.ImageId)
	}
	if !ok {
		return nil, nil
	}
	a := &LaunchTemplate{Name: t.Name, ID: r.template.LaunchTemplateId, rawTags: tagsOf(r.template.Tags),
		defaultVersion: aws.ToInt64(r.template.DefaultVersionNumber), latestVersion: aws.ToInt64(r.template.LatestVersionNumber)}
	var versionTags map[string]string
	if r.def != nil && r.def.LaunchTemplateData != nil {
		d := r.def.LaunchTemplateData
		a.Image = d.ImageId
		if keep || imageID != "" && aws.ToString(d.ImageId) == imageID {
			a.Image = t.Image
		}
		if d.InstanceType != "" {
			a.InstanceType = aws.String(string(d.InstanceType))
		}
		if p := d.IamInstanceProfile; p != nil {
			name := aws.ToString(p.Name)
			if name == "" {
				name = profileNameOfARN(aws.ToString(p.Arn))
			}
			a.InstanceProfile = &InstanceProfile{Name: name, ARN: p.Arn}
		}
		for _, id := range d.SecurityGroupIds {
			a.SecurityGroups = append(a.SecurityGroups, t.groupOfID(id))
		}
		for _, m := range d.BlockDeviceMappings {
			if m.Ebs != nil {
				a.RootVolumeSizeGB = m.Ebs.VolumeSize
				if m.Ebs.VolumeType != "" {
					a.RootVolumeType = aws.String(string(m.Ebs.VolumeType))
				}
				break
			}
		}
		for _, ts := range d.TagSpecifications {
			if ts.ResourceType == ec2types.ResourceTypeInstance {
				versionTags = tagsOf(ts.Tags)
			}
		}
		a.UserData = aws.String(decodeUserData(aws.ToString(d.UserData))) // none is "": EC2 keeps no empty user data
	}
	a.Tags = c.tagView(versionTags, t.Tags)
	if view := c.tagView(a.rawTags, t.Tags); !mapsEqual(view, t.Tags) {
		a.Tags = view // the template's own tags differ: show that
	}
	a.dataDiffers = r.def == nil || t.versionDiffers(a, c.tagView(versionTags, t.Tags))
	if !a.dataDiffers {
		a.Version = r.def.VersionNumber
	}
	return a, nil
}

// ChangeNote says, of a change that makes a new version, its number (the latest's plus one, as EC2 numbers them)
// and that it becomes the default: "new version 4, default 3 -> 4". A change of the template's own tags alone
// makes no version: it says nothing.
func (t *LaunchTemplate) ChangeNote(actual *LaunchTemplate) string {
	if !actual.dataDiffers || actual.latestVersion == 0 {
		return ""
	}
	next := actual.latestVersion + 1
	if actual.defaultVersion == 0 {
		return fmt.Sprintf("new version %d, made the default", next)
	}
	return fmt.Sprintf("new version %d, default %d -> %d", next, actual.defaultVersion, next)
}

// groupOfID is the security group task of id among the task's groups, or a group named by its id.
func (t *LaunchTemplate) groupOfID(id string) *SecurityGroup {
	for _, g := range t.SecurityGroups {
		if g != nil && g.ID != nil && *g.ID == id {
			return g
		}
	}
	return &SecurityGroup{Name: id, ID: aws.String(id)}
}

// profileNameOfARN is the name of an instance profile's ARN: arn:aws:iam::123456789012:instance-profile/path/NAME.
func profileNameOfARN(arn string) string {
	return arn[strings.LastIndex(arn, "/")+1:]
}

// decodeUserData is user data as text: EC2 keeps it base64-encoded.
func decodeUserData(s string) string {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return string(b)
	}
	return s
}

func mapsEqual(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 || maps.Equal(a, b) }

// versionDiffers reports whether the version data found (a, with the version's tags versionTags) differs from
// what the task says, field by field as the engine compares them: a nil pointer says "don't care".
func (t *LaunchTemplate) versionDiffers(a *LaunchTemplate, versionTags map[string]string) bool {
	ptrDiff := func(want, got *string) bool { return want != nil && (got == nil || *want != *got) }
	switch {
	case ptrDiff(t.Image, a.Image), ptrDiff(t.InstanceType, a.InstanceType), ptrDiff(t.RootVolumeType, a.RootVolumeType),
		ptrDiff(t.UserData, a.UserData):
		return true
	case t.RootVolumeSizeGB != nil && (a.RootVolumeSizeGB == nil || *t.RootVolumeSizeGB != *a.RootVolumeSizeGB):
		return true
	case t.InstanceProfile != nil && (a.InstanceProfile == nil || a.InstanceProfile.Name != t.InstanceProfile.Name):
		return true
	case !mapsEqual(versionTags, t.Tags):
		return true
	}
	return !sameGroups(t.SecurityGroups, a.SecurityGroups)
}

// sameGroups compares two lists of security groups by key, in any order.
func sameGroups(a, b []*SecurityGroup) bool {
	names := func(gs []*SecurityGroup) []string {
		out := make([]string, 0, len(gs))
		for _, g := range gs {
			out = append(out, g.Name)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}

// maxUserData is the most user data EC2 takes, before its base64 encoding.
const maxUserData = 16 * 1024

// CheckChanges requires an image and an instance type to create, and user data EC2 takes.
func (t *LaunchTemplate) CheckChanges(actual, expected, changes *LaunchTemplate) error {
	if expected.Name == "" {
		return errors.New("field Name of a launch template is empty")
	}
	if actual == nil {
		if expected.Image == nil || *expected.Image == "" {
			return fmt.Errorf("field Image is required to create launch template %s", expected.Name)
		}
		if expected.InstanceType == nil || *expected.InstanceType == "" {
			return fmt.Errorf("field InstanceType is required to create launch template %s", expected.Name)
		}
	}
	if expected.UserData != nil && len(*expected.UserData) > maxUserData {
		return fmt.Errorf("field UserData of launch template %s: %d bytes, more than the %d EC2 takes", expected.Name,
			len(*expected.UserData), maxUserData)
	}
	if expected.RootVolumeSizeGB != nil && *expected.RootVolumeSizeGB <= 0 {
		return fmt.Errorf("field RootVolumeSizeGB of launch template %s: %d is not a size", expected.Name, *expected.RootVolumeSizeGB)
	}
	return nil
}

// Render creates the template (with a client token; a template of the name that an earlier, interrupted run
// made is found again and brought up to date), or makes a new version with what the task says and sets it as the
// default; it reconciles the template's own tags.
func (t *LaunchTemplate) Render(ctx context.Context, c *Cloud, actual, expected, changes *LaunchTemplate) error {
	defer c.reads.templates.Forget()
	defer c.reads.running.Forget()
	what := "launch template " + expected.Name
	if actual == nil || actual.dataDiffers {
		data, err := expected.data(ctx, c)
		if err != nil {
			return err
		}
		if actual == nil {
			return expected.create(ctx, c, data)
		}
		if err := expected.newVersion(ctx, c, aws.ToString(actual.ID), data); err != nil {
			return err
		}
	}
	id := aws.ToString(actual.ID)
	return c.retag(ctx, id, fmt.Sprintf("%s (%s)", what, id), actual.rawTags, c.desiredTags(expected.Name, expected.Tags))
}

// data is the version data the task says.
func (t *LaunchTemplate) data(ctx context.Context, c *Cloud) (*ec2types.RequestLaunchTemplateData, error) {
	im, err := c.image(ctx, aws.ToString(t.Image))
	if err != nil {
		return nil, err
	}
	tags := ec2Tags(c.desiredTags(t.Name, t.Tags))
	d := &ec2types.RequestLaunchTemplateData{
		ImageId:      im.ImageId,
		InstanceType: ec2types.InstanceType(aws.ToString(t.InstanceType)),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpTokens:   ec2types.LaunchTemplateHttpTokensStateRequired,
			HttpEndpoint: ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
		},
		TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
		},
	}
	if t.InstanceProfile != nil {
		d.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(t.InstanceProfile.Name)}
	}
	for _, g := range t.SecurityGroups {
		if g.ID == nil {
			return nil, engine.NotReady(fmt.Errorf("the id of security group %s is not known yet", g.Name))
		}
		d.SecurityGroupIds = append(d.SecurityGroupIds, *g.ID)
	}
	slices.Sort(d.SecurityGroupIds)
	if t.RootVolumeSizeGB != nil || t.RootVolumeType != nil {
		root := aws.ToString(im.RootDeviceName)
		if root == "" {
			root = "/dev/xvda"
		}
		ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
			VolumeSize: t.RootVolumeSizeGB, DeleteOnTermination: aws.Bool(true), Encrypted: aws.Bool(true),
		}
		if t.RootVolumeType != nil {
			ebs.VolumeType = ec2types.VolumeType(*t.RootVolumeType)
		}
		d.BlockDeviceMappings = []ec2types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String(root), Ebs: ebs}}
	}
	if t.UserData != nil && *t.UserData != "" {
		d.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(*t.UserData)))
	}
	return d, nil
}

// dataHash identifies version data in client tokens.
func dataHash(d *ec2types.RequestLaunchTemplateData) string {
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (t *LaunchTemplate) create(ctx context.Context, c *Cloud, data *ec2types.RequestLaunchTemplateData) error {
	what := "launch template " + t.Name
	in := &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(t.Name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeLaunchTemplate, c.desiredTags(t.Name, t.Tags))},
	}
	for attempt := 0; attempt < maxTokenAttempts; attempt++ {
		in.ClientToken = aws.String(clientToken(attempt, "LaunchTemplate", c.Cluster, t.Name, dataHash(data)))
		out, err := c.EC2.CreateLaunchTemplate(ctx, in)
		if ErrorCode(err) == "InvalidLaunchTemplateName.AlreadyExistsException" {
			return t.existing(ctx, c, Classify("creating "+what, err))
		}
		if err != nil {
			return Classify("creating "+what, err)
		}
		lt := out.LaunchTemplate
		if lt == nil {
			return engine.Terminal(fmt.Errorf("creating %s: AWS answered without the template", what))
		}
		ev := tokenEvidence{Created: aws.ToTime(lt.CreateTime)}
		ev.ServerTime, _ = awsmiddleware.GetServerTime(out.ResultMetadata)
		verdict := judgeToken(ev, c.Cluster, t.Name)
		if verdict == tokenRead {
			if ev.Read, err = readTemplateForToken(ctx, c, aws.ToString(lt.LaunchTemplateId)); err != nil {
				return Classify("reading "+what+" again", err)
			}
			verdict = judgeToken(ev, c.Cluster, t.Name)
		}
		if verdict == tokenStale {
			continue
		}
		t.ID, t.Version = lt.LaunchTemplateId, lt.DefaultVersionNumber
		if t.Version == nil {
			t.Version = aws.Int64(1)
		}
		engine.Logger(ctx).Info("created launch template", "id", aws.ToString(lt.LaunchTemplateId))
		return nil
	}
	return engine.Terminal(fmt.Errorf("creating %s: its first %d client tokens were all used by templates that are gone or no "+
		"longer this cluster's (clusters of this name deleted and made again): give the cluster another name, or wait a day for EC2 "+
		"to forget the tokens", what, maxTokenAttempts))
}

// readTemplateForToken reads launch template id again for judgeToken.
func readTemplateForToken(ctx context.Context, c *Cloud, id string) (*tokenReadResult, error) {
	out, err := c.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{id}})
	switch code := ErrorCode(err); {
	case code == "InvalidLaunchTemplateId.NotFound", code == "InvalidLaunchTemplateId.Malformed":
		return &tokenReadResult{}, nil
	case err != nil:
		return nil, err
	}
	for _, lt := range out.LaunchTemplates {
		if aws.ToString(lt.LaunchTemplateId) == id {
			return &tokenReadResult{Found: true, Tags: tagsOf(lt.Tags)}, nil
		}
	}
	return &tokenReadResult{}, nil
}

// existing explains a template of t's name that a create found already there (dup is the create's error): the
// cluster's own (an earlier run made it and stopped before it was done, or the list did not show it yet) is read
// again and brought up to date (NotReady); someone else's is an error that waiting does not mend.
func (t *LaunchTemplate) existing(ctx context.Context, c *Cloud, dup error) error {
	what := "launch template " + t.Name
	out, err := c.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{t.Name}})
	if err != nil && ErrorCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
		return Classify("reading "+what, err)
	}
	if err == nil && len(out.LaunchTemplates) > 0 && tagsOf(out.LaunchTemplates[0].Tags)[ClusterTag(c.Cluster)] != ownedValue {
		return engine.Terminal(fmt.Errorf("a launch template named %s (%s) exists and is not this cluster's (no tag %s=%s): rename the "+
			"instance group or remove the template: %w", t.Name, aws.ToString(out.LaunchTemplates[0].LaunchTemplateId),
			ClusterTag(c.Cluster), ownedValue, dup))
	}
	return engine.NotReady(fmt.Errorf("%s exists already: reading it again: %w", what, dup))
}

// newVersion makes a version of template id with data and sets it as the default. Its client token is derived
// from the template and the data, so that a version made by a run that stopped before it set the default is
// the one this run sets.
func (t *LaunchTemplate) newVersion(ctx context.Context, c *Cloud, id string, data *ec2types.RequestLaunchTemplateData) error {
	what := fmt.Sprintf("launch template %s (%s)", t.Name, id)
	out, err := c.EC2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId:   aws.String(id),
		LaunchTemplateData: data,
		ClientToken:        aws.String(clientToken(0, "LaunchTemplateVersion", id, dataHash(data))),
	})
	if err != nil {
		return Classify("making a new version of "+what, err)
	}
	if out.LaunchTemplateVersion == nil || out.LaunchTemplateVersion.VersionNumber == nil {
		return engine.Terminal(fmt.Errorf("making a new version of %s: AWS answered without its number", what))
	}
	n := *out.LaunchTemplateVersion.VersionNumber
	if _, err := c.EC2.ModifyLaunchTemplate(ctx, &ec2.ModifyLaunchTemplateInput{
		LaunchTemplateId: aws.String(id),
		DefaultVersion:   aws.String(strconv.FormatInt(n, 10)),
	}); err != nil {
		return Classify(fmt.Sprintf("making version %d the default of %s", n, what), err)
	}
	t.ID, t.Version = aws.String(id), aws.Int64(n)
	engine.Logger(ctx).Info("made a new default version of launch template", "id", id, "version", n)
	return nil
}
