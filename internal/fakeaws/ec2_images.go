package fakeaws

import (
	"net/url"
	"slices"
	"strings"
)

// Images: the public ones of every region, seeded.

// DebianOwner is the account of the public Debian images the fake holds.
const DebianOwner = "136693071363"

type image struct {
	id, name, arch, created string
}

// seedImages makes the public images every region has: Debian 12 for amd64 and arm64, two releases each.
func (s *Server) seedImages() {
	for _, rel := range []struct{ date, created string }{
		{"20261001-1900", "2026-10-01T19:00:00.000Z"},
		{"20261101-2000", "2026-11-01T20:00:00.000Z"},
	} {
		for _, arch := range []string{"amd64", "arm64"} {
			im := &image{id: s.newID("ami"), name: "debian-12-" + arch + "-" + rel.date, arch: "x86_64", created: rel.created}
			if arch == "arm64" {
				im.arch = "arm64"
			}
			s.ec2.images[im.id] = im
		}
	}
}

// AddImage adds a public Debian image to every region (a release published since the fake started): its name,
// its architecture (x86_64 or arm64) and its creation date (RFC 3339, "2026-12-01T20:00:00.000Z"). It returns
// the image's id.
func (s *Server) AddImage(name, arch, created string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	im := &image{id: s.newID("ami"), name: name, arch: arch, created: created}
	s.ec2.images[im.id] = im
	return im.id
}

type imageXML struct {
	ImageID         string            `xml:"imageId"`
	ImageLocation   string            `xml:"imageLocation"`
	ImageState      string            `xml:"imageState"`
	ImageOwnerID    string            `xml:"imageOwnerId"`
	CreationDate    string            `xml:"creationDate"`
	IsPublic        bool              `xml:"isPublic"`
	Architecture    string            `xml:"architecture"`
	ImageType       string            `xml:"imageType"`
	Name            string            `xml:"name"`
	Description     string            `xml:"description"`
	RootDeviceType  string            `xml:"rootDeviceType"`
	RootDeviceName  string            `xml:"rootDeviceName"`
	Virtualization  string            `xml:"virtualizationType"`
	Hypervisor      string            `xml:"hypervisor"`
	EnaSupport      bool              `xml:"enaSupport"`
	BootMode        string            `xml:"bootMode,omitempty"`
	PlatformDetails string            `xml:"platformDetails"`
	BlockDevices    list[ltDeviceXML] `xml:"blockDeviceMapping"`
	Tags            *list[tagXML]     `xml:"tagSet"`
}

func (s *Server) imageXML(im *image) imageXML {
	x := imageXML{ImageID: im.id, ImageLocation: DebianOwner + "/" + im.name, ImageState: "available", ImageOwnerID: DebianOwner,
		CreationDate: im.created, IsPublic: true, Architecture: im.arch, ImageType: "machine", Name: im.name,
		Description: "Debian 12 (" + im.name + ")", RootDeviceType: "ebs", RootDeviceName: rootDevice,
		Virtualization: "hvm", Hypervisor: "xen", EnaSupport: true, PlatformDetails: "Linux/UNIX", Tags: s.optTags(im.id)}
	if im.arch == "arm64" {
		x.BootMode = "uefi"
	}
	yes, no := true, false
	x.BlockDevices.Items = []ltDeviceXML{{DeviceName: rootDevice, Ebs: &ltEbsXML{Encrypted: &no, DeleteOnTermination: &yes,
		SnapshotID: "snap-" + strings.TrimPrefix(im.id, "ami-"), VolumeSize: 8, VolumeType: "gp2"}}}
	return x
}

func (s *Server) describeImages(region string, form url.Values) (any, error) {
	return describe(form, describer[*image, imageXML]{dialect: ec2Dialect, set: "imagesSet", minMax: 5, maxMax: 1000,
		filters: []string{"name", "state", "architecture", "image-id", "owner-id", "owner-alias", "is-public", "root-device-type",
			"virtualization-type", "image-type", "description"},
		field: fields(func(im *image) map[string][]string {
			return map[string][]string{"name": {im.name}, "state": {"available"}, "architecture": {im.arch}, "image-id": {im.id},
				"owner-id": {DebianOwner}, "is-public": {"true"}, "root-device-type": {"ebs"}, "virtualization-type": {"hvm"},
				"image-type": {"machine"}, "description": {"Debian 12 (" + im.name + ")"}}
		}),
		tags: func(im *image) map[string]string { return s.ec2.tags[im.id] },
		key:  func(im *image) string { return im.id },
		item: s.imageXML,
	}, func() ([]*image, func(*image) bool, error) {
		all, keep, err := byID(form, ids{"ImageId", "ami", "InvalidAMIID.Malformed", ""}, func() []*image {
			return inIDOrder(s.ec2.images, func(*image) bool { return true })
		}, func(im *image) string { return im.id })
		// Every image is Debian's, in every region.
		if owners := strList(form, "Owner"); len(owners) > 0 && !slices.Contains(owners, DebianOwner) {
			return nil, nil, err
		}
		return all, keep, err
	})
}
