package gcetasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"kubeup.dev/kubeup/internal/gcelabels"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
)

// InstanceTemplate is what the instances of one instance group boot: machine type, image, service account,
// network, network tags, labels, root disk and the startup script that runs nodeup. GCE templates cannot change:
// the template's real name is <Name>-<hash8 of its content>, a change of the task is a new template of another
// name (a replacement in the plan, which names the old one; and a change of the groups that use it: they are
// pointed at the new one), and the old template is deleted once no group of the cluster uses it, by the cleanup
// cloudup runs after an apply (DeleteUnusedTemplates; UnusedTemplatesAfter says in the dry run what it will
// delete). Its key is "InstanceTemplate/<Name>".
type InstanceTemplate struct {
	// Name is the template's base name, a GCE resource name of at most 54 characters: "nodes-gce-example-com".
	Name string
	// MachineType is the machine type ("e2-standard-2"). Required.
	MachineType string
	// Image is the boot image: a URL or a partial one ("projects/debian-cloud/global/images/family/debian-12").
	// Required.
	Image string
	// ServiceAccount is the e-mail of the service account the instances run as (nil: none); they get the
	// cloud-platform scope, and the account's roles decide what they may do.
	ServiceAccount *string
	// Network and Subnetwork are where the instances' interface is. Network is required.
	Network    *Network
	Subnetwork *Subnetwork
	// Tags are the instances' network tags (what firewall rules target); in any order.
	Tags []string `kubeup:"set,nilempty"`
	// Labels are the instances' and their boot disks' labels besides ClusterLabels, which kubeup always adds.
	Labels map[string]string `kubeup:"nilempty"`
	// RootDiskSizeGB is the boot disk's size (nil: the image's).
	RootDiskSizeGB *int64
	// StartupScript is the instances' startup-script metadata.
	StartupScript *string
	// CanIpForward lets the instances send and receive packets whose addresses are not their own: what an
	// instance does for its pods when the network routes their range to it (kubenet's routes, NetworkRoutes).
	CanIpForward bool
	// MakeStartupScript, when set, makes StartupScript once the tasks in After are done (see Resolve).
	MakeStartupScript func() (string, error) `kubeup:"-"`
	// After are the tasks that must be done before MakeStartupScript runs (the node configuration it points to).
	After []engine.Task `kubeup:"-"`

	// SelfLink is the partial URL of the template the task states
	// ("projects/<project>/global/instanceTemplates/<Name>-<hash8>"), set by Find and Render (output).
	SelfLink *string `kubeup:"output"`
}

var (
	_ engine.Resource[*InstanceTemplate, *Cloud] = (*InstanceTemplate)(nil)
	_ engine.Renderer[*InstanceTemplate, *Cloud] = (*InstanceTemplate)(nil)
	_ engine.Resolver                            = (*InstanceTemplate)(nil)
	_ engine.Replacer[*InstanceTemplate]         = (*InstanceTemplate)(nil)
	_ engine.Classed                             = (*InstanceTemplate)(nil)
)

func (t *InstanceTemplate) Key() engine.Key {
	return engine.Key{Type: "InstanceTemplate", Name: t.Name}
}

func (t *InstanceTemplate) Deps() []engine.Task {
	var deps []engine.Task
	if t.Network != nil {
		deps = append(deps, t.Network)
	}
	if t.Subnetwork != nil {
		deps = append(deps, t.Subnetwork)
	}
	return append(deps, t.After...)
}

func (t *InstanceTemplate) APIClass() string { return "compute" }

// Resolve sets StartupScript from MakeStartupScript, once the tasks of After are done.
func (t *InstanceTemplate) Resolve() error {
	if t.MakeStartupScript == nil {
		return nil
	}
	s, err := t.MakeStartupScript()
	if err != nil {
		return fmt.Errorf("making the startup script of instance template %s: %w", t.Name, err)
	}
	t.StartupScript = &s
	return nil
}

// maxBaseName is the longest base name: the real name adds "-" and 8 hex digits, and GCE names are 63 at most.
const maxBaseName = 54

// templateNameRE matches the real names of the templates of one base name.
func templateNameRE(base string) *regexp.Regexp {
	return regexp.MustCompile("^" + regexp.QuoteMeta(base) + "-[0-9a-f]{8}$")
}

// properties are the template's properties as kubeup makes them from the task.
func (t *InstanceTemplate) properties(c *Cloud) *compute.InstanceProperties {
	labels := c.desiredLabels(nil, t.Labels)
	boot := &compute.AttachedDisk{
		Boot: true, AutoDelete: true, Type: "PERSISTENT", Mode: "READ_WRITE",
		InitializeParams: &compute.AttachedDiskInitializeParams{SourceImage: t.Image, Labels: labels},
	}
	if t.RootDiskSizeGB != nil {
		boot.InitializeParams.DiskSizeGb = *t.RootDiskSizeGB
	}
	nic := &compute.NetworkInterface{
		AccessConfigs: []*compute.AccessConfig{{Name: "external-nat", Type: "ONE_TO_ONE_NAT"}},
	}
	if t.Network != nil {
		nic.Network = fmt.Sprintf("projects/%s/global/networks/%s", c.Project, t.Network.Name)
	}
	if t.Subnetwork != nil {
		nic.Subnetwork = fmt.Sprintf("projects/%s/regions/%s/subnetworks/%s", c.Project, t.Subnetwork.Region, t.Subnetwork.Name)
	}
	p := &compute.InstanceProperties{
		MachineType:       t.MachineType,
		Disks:             []*compute.AttachedDisk{boot},
		NetworkInterfaces: []*compute.NetworkInterface{nic},
		Labels:            labels,
		CanIpForward:      t.CanIpForward,
	}
	if len(t.Tags) > 0 {
		p.Tags = &compute.Tags{Items: sortedCopy(t.Tags)}
	}
	if t.ServiceAccount != nil {
		p.ServiceAccounts = []*compute.ServiceAccount{{Email: *t.ServiceAccount, Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}}
	}
	if t.StartupScript != nil {
		p.Metadata = &compute.Metadata{Items: []*compute.MetadataItems{{Key: "startup-script", Value: t.StartupScript}}}
	}
	return p
}

// realName is the template's name for properties p: <Name>-<first 8 hex digits of the SHA-256 of p's JSON>.
func (t *InstanceTemplate) realName(p *compute.InstanceProperties) string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return t.Name + "-" + hex.EncodeToString(sum[:4])
}

func (c *Cloud) templateLink(name string) string {
	return fmt.Sprintf("projects/%s/global/instanceTemplates/%s", c.Project, name)
}

// Find looks among the cluster's templates (one instanceTemplates.list per run) for the one the task states, by
// its content-derived name: when it exists, the template is what the task says. Otherwise the newest template of
// the base name, if any, is read back field by field, so that the plan shows what changes.
func (t *InstanceTemplate) Find(ctx context.Context, c *Cloud) (*InstanceTemplate, error) {
	all, err := c.instanceTemplates(ctx)
	if err != nil {
		return nil, err
	}
	want := t.realName(t.properties(c))
	link := c.templateLink(want)
	t.SelfLink = &link
	if _, ok := all[want]; ok {
		a := *t
		a.MakeStartupScript, a.After = nil, nil
		return &a, nil
	}
	re := templateNameRE(t.Name)
	var newest *compute.InstanceTemplate
	for name, it := range all {
		if re.MatchString(name) && (newest == nil || it.CreationTimestamp > newest.CreationTimestamp ||
			it.CreationTimestamp == newest.CreationTimestamp && name > newest.Name) {
			newest = it
		}
	}
	if newest == nil {
		return nil, nil
	}
	return t.asFound(c, newest), nil
}

// asFound is template it as the task would state it.
func (t *InstanceTemplate) asFound(c *Cloud, it *compute.InstanceTemplate) *InstanceTemplate {
	p := it.Properties
	oldLink := c.templateLink(it.Name)
	a := &InstanceTemplate{Name: t.Name, MachineType: p.MachineType, Labels: c.labelView(p.Labels, t.Labels), SelfLink: &oldLink,
		CanIpForward: p.CanIpForward}
	if p.Tags != nil {
		a.Tags = sortedCopy(p.Tags.Items)
	}
	if len(p.Disks) > 0 && p.Disks[0].InitializeParams != nil {
		ip := p.Disks[0].InitializeParams
		a.Image = ip.SourceImage
		if ip.DiskSizeGb != 0 {
			a.RootDiskSizeGB = &ip.DiskSizeGb
		}
	}
	if len(p.NetworkInterfaces) > 0 {
		nic := p.NetworkInterfaces[0]
		if nic.Network != "" {
			a.Network = &Network{Name: lastSegment(nic.Network)}
			if t.Network != nil && t.Network.Name == a.Network.Name {
				a.Network = t.Network
			}
		}
		if nic.Subnetwork != "" {
			a.Subnetwork = &Subnetwork{Name: lastSegment(nic.Subnetwork), Region: regionOf(nic.Subnetwork)}
			if t.Subnetwork != nil && t.Subnetwork.Key() == a.Subnetwork.Key() {
				a.Subnetwork = t.Subnetwork
			}
		}
	}
	if len(p.ServiceAccounts) > 0 {
		a.ServiceAccount = &p.ServiceAccounts[0].Email
	}
	if p.Metadata != nil {
		for _, it := range p.Metadata.Items {
			if it.Key == "startup-script" && it.Value != nil {
				a.StartupScript = it.Value
			}
		}
	}
	if slices.Equal(a.Tags, sortedCopy(t.Tags)) {
		a.Tags = t.Tags // the same set in the task's order
	}
	return a
}

// Replaces names the template a change replaces: a change is a new template, and the old one is deleted after
// the apply once no group of the cluster uses it (the plan lists that deletion too).
func (t *InstanceTemplate) Replaces(actual *InstanceTemplate) string {
	if actual.SelfLink == nil {
		return "replaces the template in use"
	}
	return "replaces " + lastSegment(*actual.SelfLink) + ": instance templates cannot change"
}

// regionOf is the region of a regional resource URL (".../regions/us-central1/subnetworks/x").
func regionOf(url string) string {
	parts := strings.Split(url, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "regions" {
			return parts[i+1]
		}
	}
	return ""
}

// CheckChanges requires a base name that leaves room for the hash, a machine type, an image and a network.
func (t *InstanceTemplate) CheckChanges(actual, expected, changes *InstanceTemplate) error {
	switch {
	case !gcelabels.ValidName(expected.Name) || len(expected.Name) > maxBaseName:
		return fmt.Errorf("field Name of instance template %q is not a GCE resource name of at most %d characters (the real name "+
			"adds '-' and 8 hex digits)", expected.Name, maxBaseName)
	case expected.MachineType == "":
		return fmt.Errorf("field MachineType is required for instance template %s", expected.Name)
	case expected.Image == "":
		return fmt.Errorf("field Image is required for instance template %s", expected.Name)
	case expected.Network == nil:
		return fmt.Errorf("field Network is required for instance template %s", expected.Name)
	case expected.RootDiskSizeGB != nil && *expected.RootDiskSizeGB <= 0:
		return fmt.Errorf("field RootDiskSizeGB of instance template %s: %d is not a size", expected.Name, *expected.RootDiskSizeGB)
	}
	for k, v := range expected.Labels {
		if !gcelabels.LabelKeyRE.MatchString(k) || !gcelabels.LabelValueRE.MatchString(v) {
			return fmt.Errorf("field Labels of instance template %s: %s=%s is not a GCE label (encode tags with EncodeTags)", expected.Name, k, v)
		}
	}
	return nil
}

// Render creates the template the task states, under its content-derived name, with a requestId derived from
// that name: a create repeated after a crash makes no second template. The template it replaces is left for
// the groups that still use it; DeleteUnusedTemplates deletes it later.
func (t *InstanceTemplate) Render(ctx context.Context, c *Cloud, actual, expected, changes *InstanceTemplate) error {
	defer c.reads.templates.Forget()
	p := expected.properties(c)
	name := expected.realName(p)
	what := fmt.Sprintf("instance template %s (%s)", expected.Name, name)
	it := &compute.InstanceTemplate{Name: name, Description: c.ownedDescription(), Properties: p}
	op, err := c.Compute.InstanceTemplates.Insert(c.Project, it).RequestId(requestID(0, "InstanceTemplate", c.Cluster, name)).Context(ctx).Do()
	err = c.mutate(ctx, "creating "+what, op, err)
	if isConflict(err) {
		// A template of the name exists: its name is its content, so it is the one the task states (made by a run
		// that stopped before it was listed), unless someone else made it.
		got, gerr := c.Compute.InstanceTemplates.Get(c.Project, name).Context(ctx).Do()
		if gerr != nil {
			return Classify("reading "+what, gerr)
		}
		if got.Properties == nil || !c.owns(got.Properties.Labels) {
			return engine.Terminal(fmt.Errorf("an instance template named %s exists and is not cluster %s's: remove it: %w", name, c.Cluster, err))
		}
		err = nil
	}
	if err != nil {
		return err
	}
	link := c.templateLink(name)
	expected.SelfLink = &link
	engine.Logger(ctx).Info("created instance template", "name", name)
	return nil
}
