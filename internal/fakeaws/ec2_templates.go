package fakeaws

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Images (public ones of every region, seeded) and launch templates with their versions.

// ---- launch templates

type launchTemplate struct {
	id, region, name string
	created          time.Time
	defaultVersion   int64
	// versions are the versions by number - 1; nil: deleted.
	versions []*ltVersion
	// asgInvisible is how many more Auto Scaling calls that name the template do not know it
	// (Faults.TemplateInvisibleCalls).
	asgInvisible int
}

func (t *launchTemplate) latest() int64 { return int64(len(t.versions)) }

type ltVersion struct {
	number  int64
	desc    string
	created time.Time
	data    ltData
}

// ltData is the launch template data the fake keeps (and instances are launched from).
type ltData struct {
	ImageID, InstanceType, KeyName string
	UserData                       string // base64, as given
	ProfileName, ProfileArn        string
	SecurityGroupIDs, GroupNames   []string
	Devices                        []ltDevice
	// TagSpecs are the tags for the resources launched, by resource type (instance, volume, ...).
	TagSpecs map[string]map[string]string
	Metadata *ltMetadata
}

type ltDevice struct {
	DeviceName, NoDevice, VirtualName string
	Ebs                               *ltEbs
}

type ltEbs struct {
	VolumeSize, Iops, Throughput int32
	VolumeType, KmsKeyID         string
	SnapshotID                   string
	Encrypted, DeleteOnTerm      *bool
}

type ltMetadata struct {
	HTTPTokens, HTTPEndpoint, InstanceMetadataTags string
	HopLimit                                       int32
}

// parseLTData reads the launch template data under prefix over base: what is given replaces what base has
// (lists whole).
func parseLTData(form url.Values, prefix string, base ltData) (ltData, error) {
	d := base
	p := prefix + "."
	str := func(key string, dst *string) {
		if has(form, p+key) {
			*dst = form.Get(p + key)
		}
	}
	str("ImageId", &d.ImageID)
	str("InstanceType", &d.InstanceType)
	str("KeyName", &d.KeyName)
	str("UserData", &d.UserData)
	if d.UserData != "" {
		if _, err := base64.StdEncoding.DecodeString(d.UserData); err != nil {
			return d, errorf("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
	}
	if hasUnder(form, p+"IamInstanceProfile") {
		d.ProfileName, d.ProfileArn = form.Get(p+"IamInstanceProfile.Name"), form.Get(p+"IamInstanceProfile.Arn")
	}
	if hasUnder(form, p+"SecurityGroupId") {
		d.SecurityGroupIDs = strList(form, p+"SecurityGroupId")
	}
	if hasUnder(form, p+"SecurityGroup") {
		d.GroupNames = strList(form, p+"SecurityGroup")
	}
	if hasUnder(form, p+"BlockDeviceMapping") {
		d.Devices = nil
		for _, b := range subPrefixes(form, p+"BlockDeviceMapping") {
			dev := ltDevice{DeviceName: form.Get(b + ".DeviceName"), NoDevice: form.Get(b + ".NoDevice"), VirtualName: form.Get(b + ".VirtualName")}
			if hasUnder(form, b+".Ebs") {
				e := &ltEbs{VolumeType: form.Get(b + ".Ebs.VolumeType"), KmsKeyID: form.Get(b + ".Ebs.KmsKeyId"), SnapshotID: form.Get(b + ".Ebs.SnapshotId")}
				for key, dst := range map[string]*int32{"VolumeSize": &e.VolumeSize, "Iops": &e.Iops, "Throughput": &e.Throughput} {
					n, _, err := intParam(form, b+".Ebs."+key)
					if err != nil {
						return d, err
					}
					*dst = int32(n)
				}
				for key, dst := range map[string]**bool{"Encrypted": &e.Encrypted, "DeleteOnTermination": &e.DeleteOnTerm} {
					v, ok, err := boolParam(form, b+".Ebs."+key)
					if err != nil {
						return d, err
					}
					if ok {
						*dst = &v
					}
				}
				if e.VolumeType != "" && !volumeTypes[e.VolumeType] {
					return d, errorf("InvalidParameterValue", "Value (%s) for parameter volumeType is invalid.", e.VolumeType)
				}
				dev.Ebs = e
			}
			d.Devices = append(d.Devices, dev)
		}
	}
	if hasUnder(form, p+"TagSpecification") {
		specs, err := tagSpecs(form, p+"TagSpecification", "instance", "volume", "network-interface", "spot-instances-request")
		if err != nil {
			return d, err
		}
		d.TagSpecs = specs
	}
	if hasUnder(form, p+"MetadataOptions") {
		m := &ltMetadata{HTTPTokens: form.Get(p + "MetadataOptions.HttpTokens"), HTTPEndpoint: form.Get(p + "MetadataOptions.HttpEndpoint"),
			InstanceMetadataTags: form.Get(p + "MetadataOptions.InstanceMetadataTags")}
		n, _, err := intParam(form, p+"MetadataOptions.HttpPutResponseHopLimit")
		if err != nil {
			return d, err
		}
		m.HopLimit = int32(n)
		d.Metadata = m
	}
	return d, nil
}

type ltDataXML struct {
	ImageID          string              `xml:"imageId,omitempty"`
	InstanceType     string              `xml:"instanceType,omitempty"`
	KeyName          string              `xml:"keyName,omitempty"`
	UserData         string              `xml:"userData,omitempty"`
	Profile          *ltProfileXML       `xml:"iamInstanceProfile"`
	SecurityGroupIDs *list[string]       `xml:"securityGroupIdSet"`
	GroupNames       *list[string]       `xml:"securityGroupSet"`
	Devices          *list[ltDeviceXML]  `xml:"blockDeviceMappingSet"`
	TagSpecs         *list[ltTagSpecXML] `xml:"tagSpecificationSet"`
	Metadata         *ltMetadataXML      `xml:"metadataOptions"`
}

type ltProfileXML struct {
	Arn  string `xml:"arn,omitempty"`
	Name string `xml:"name,omitempty"`
}

type ltDeviceXML struct {
	DeviceName  string    `xml:"deviceName,omitempty"`
	NoDevice    string    `xml:"noDevice,omitempty"`
	VirtualName string    `xml:"virtualName,omitempty"`
	Ebs         *ltEbsXML `xml:"ebs"`
}

type ltEbsXML struct {
	Encrypted           *bool  `xml:"encrypted"`
	DeleteOnTermination *bool  `xml:"deleteOnTermination"`
	Iops                int32  `xml:"iops,omitempty"`
	KmsKeyID            string `xml:"kmsKeyId,omitempty"`
	SnapshotID          string `xml:"snapshotId,omitempty"`
	VolumeSize          int32  `xml:"volumeSize,omitempty"`
	VolumeType          string `xml:"volumeType,omitempty"`
	Throughput          int32  `xml:"throughput,omitempty"`
}

type ltTagSpecXML struct {
	ResourceType string       `xml:"resourceType"`
	Tags         list[tagXML] `xml:"tagSet"`
}

type ltMetadataXML struct {
	State                string `xml:"state"`
	HTTPTokens           string `xml:"httpTokens,omitempty"`
	HopLimit             int32  `xml:"httpPutResponseHopLimit,omitempty"`
	HTTPEndpoint         string `xml:"httpEndpoint,omitempty"`
	InstanceMetadataTags string `xml:"instanceMetadataTags,omitempty"`
}

func (d ltData) xml() ltDataXML {
	x := ltDataXML{ImageID: d.ImageID, InstanceType: d.InstanceType, KeyName: d.KeyName, UserData: d.UserData}
	if d.ProfileName != "" || d.ProfileArn != "" {
		x.Profile = &ltProfileXML{d.ProfileArn, d.ProfileName}
	}
	if len(d.SecurityGroupIDs) > 0 {
		l := items(d.SecurityGroupIDs)
		x.SecurityGroupIDs = &l
	}
	if len(d.GroupNames) > 0 {
		l := items(d.GroupNames)
		x.GroupNames = &l
	}
	if len(d.Devices) > 0 {
		x.Devices = &list[ltDeviceXML]{}
		for _, dev := range d.Devices {
			dx := ltDeviceXML{DeviceName: dev.DeviceName, NoDevice: dev.NoDevice, VirtualName: dev.VirtualName}
			if e := dev.Ebs; e != nil {
				dx.Ebs = &ltEbsXML{e.Encrypted, e.DeleteOnTerm, e.Iops, e.KmsKeyID, e.SnapshotID, e.VolumeSize, e.VolumeType, e.Throughput}
			}
			x.Devices.Items = append(x.Devices.Items, dx)
		}
	}
	if len(d.TagSpecs) > 0 {
		x.TagSpecs = &list[ltTagSpecXML]{}
		for _, rt := range sortedKeys(d.TagSpecs) {
			x.TagSpecs.Items = append(x.TagSpecs.Items, ltTagSpecXML{rt, tagList(d.TagSpecs[rt])})
		}
	}
	if m := d.Metadata; m != nil {
		x.Metadata = &ltMetadataXML{"applied", m.HTTPTokens, m.HopLimit, m.HTTPEndpoint, m.InstanceMetadataTags}
	}
	return x
}

type launchTemplateXML struct {
	ID             string        `xml:"launchTemplateId"`
	Name           string        `xml:"launchTemplateName"`
	CreateTime     string        `xml:"createTime"`
	CreatedBy      string        `xml:"createdBy"`
	DefaultVersion int64         `xml:"defaultVersionNumber"`
	LatestVersion  int64         `xml:"latestVersionNumber"`
	Tags           *list[tagXML] `xml:"tagSet"`
}

const createdBy = "arn:aws:iam::" + AccountID + ":root"

func (s *Server) templateXML(t *launchTemplate) launchTemplateXML {
	return launchTemplateXML{ID: t.id, Name: t.name, CreateTime: timestamp(t.created), CreatedBy: createdBy,
		DefaultVersion: t.defaultVersion, LatestVersion: t.latest(), Tags: s.optTags(t.id)}
}

type ltVersionXML struct {
	ID             string    `xml:"launchTemplateId"`
	Name           string    `xml:"launchTemplateName"`
	VersionNumber  int64     `xml:"versionNumber"`
	Description    string    `xml:"versionDescription,omitempty"`
	CreateTime     string    `xml:"createTime"`
	CreatedBy      string    `xml:"createdBy"`
	DefaultVersion bool      `xml:"defaultVersion"`
	Data           ltDataXML `xml:"launchTemplateData"`
}

func versionXML(t *launchTemplate, v *ltVersion) ltVersionXML {
	return ltVersionXML{ID: t.id, Name: t.name, VersionNumber: v.number, Description: v.desc, CreateTime: timestamp(v.created),
		CreatedBy: createdBy, DefaultVersion: v.number == t.defaultVersion, Data: v.data.xml()}
}

var templateName = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

func (s *Server) createLaunchTemplate(region string, form url.Values) (any, error) {
	if prev, err := s.tokenAnswerFor(region, form); prev != nil || err != nil {
		return prev, err
	}
	name, err := required(form, "LaunchTemplateName")
	if err != nil {
		return nil, err
	}
	if !templateName.MatchString(name) {
		return nil, errorf("InvalidLaunchTemplateName.MalformedException", "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'")
	}
	for _, t := range s.ec2.templates {
		if t.region == region && t.name == name {
			return nil, errorf("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
		}
	}
	if !hasUnder(form, "LaunchTemplateData") {
		return nil, errorf("MissingParameter", "The request must contain the parameter LaunchTemplateData")
	}
	data, err := parseLTData(form, "LaunchTemplateData", ltData{})
	if err != nil {
		return nil, err
	}
	specs, err := tagSpecs(form, "TagSpecification", "launch-template")
	if err != nil {
		return nil, err
	}
	now := time.Now()
	t := &launchTemplate{id: s.newID("lt"), region: region, name: name, created: now, defaultVersion: 1,
		asgInvisible: s.faults.TemplateInvisibleCalls}
	t.versions = []*ltVersion{{number: 1, desc: form.Get("VersionDescription"), created: now, data: data}}
	s.ec2.templates[t.id] = t
	s.setTags(t.id, specs["launch-template"])
	answer := struct {
		RequestID string            `xml:"requestId"`
		Template  launchTemplateXML `xml:"launchTemplate"`
	}{"fake-request", s.templateXML(t)}
	s.rememberToken(region, form, answer)
	return answer, nil
}

// template is the launch template of a request's LaunchTemplateId or LaunchTemplateName.
func (s *Server) template(region string, form url.Values) (*launchTemplate, error) {
	return s.templateByIDOrName(region, form.Get("LaunchTemplateId"), form.Get("LaunchTemplateName"))
}

func (s *Server) templateByIDOrName(region, id, name string) (*launchTemplate, error) {
	switch {
	case id != "":
		t, ok := s.ec2.templates[id]
		if !ok || t.region != region {
			return nil, notFound(id)
		}
		return t, nil
	case name != "":
		for _, t := range s.ec2.templates {
			if t.region == region && t.name == name {
				return t, nil
			}
		}
		return nil, errorf("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
	}
	return nil, errorf("MissingParameter", "The request must contain the parameter LaunchTemplateName or LaunchTemplateId")
}

// version is version v of t: a number, $Latest or $Default ("" is $Default).
func (t *launchTemplate) version(v string) (*ltVersion, error) {
	var n int64
	switch v {
	case "", "$Default":
		n = t.defaultVersion
	case "$Latest":
		n = t.latest()
	default:
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, errorf("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for template %s", v, t.id)
		}
	}
	if n < 1 || n > t.latest() || t.versions[n-1] == nil {
		return nil, errorf("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for template %s", v, t.id)
	}
	return t.versions[n-1], nil
}

func (s *Server) createLaunchTemplateVersion(region string, form url.Values) (any, error) {
	if prev, err := s.tokenAnswerFor(region, form); prev != nil || err != nil {
		return prev, err
	}
	t, err := s.template(region, form)
	if err != nil {
		return nil, err
	}
	if !hasUnder(form, "LaunchTemplateData") {
		return nil, errorf("MissingParameter", "The request must contain the parameter LaunchTemplateData")
	}
	var base ltData
	if sv := form.Get("SourceVersion"); sv != "" {
		src, err := t.version(sv)
		if err != nil {
			return nil, err
		}
		base = src.data
	}
	data, err := parseLTData(form, "LaunchTemplateData", base)
	if err != nil {
		return nil, err
	}
	v := &ltVersion{number: t.latest() + 1, desc: form.Get("VersionDescription"), created: time.Now(), data: data}
	t.versions = append(t.versions, v)
	answer := struct {
		RequestID string       `xml:"requestId"`
		Version   ltVersionXML `xml:"launchTemplateVersion"`
	}{"fake-request", versionXML(t, v)}
	s.rememberToken(region, form, answer)
	return answer, nil
}

func (s *Server) modifyLaunchTemplate(region string, form url.Values) (any, error) {
	t, err := s.template(region, form)
	if err != nil {
		return nil, err
	}
	if dv := form.Get("SetDefaultVersion"); dv != "" {
		v, err := t.version(dv)
		if err != nil {
			return nil, err
		}
		t.defaultVersion = v.number
	}
	return struct {
		RequestID string            `xml:"requestId"`
		Template  launchTemplateXML `xml:"launchTemplate"`
	}{"fake-request", s.templateXML(t)}, nil
}

func (s *Server) describeLaunchTemplates(region string, form url.Values) (any, error) {
	return describe(form, describer[*launchTemplate, launchTemplateXML]{dialect: ec2Dialect, set: "launchTemplates", minMax: 1, maxMax: 200,
		filters: []string{"launch-template-name", "create-time"},
		field: fields(func(t *launchTemplate) map[string][]string {
			return map[string][]string{"launch-template-name": {t.name}, "create-time": {timestamp(t.created)}}
		}),
		tags: func(t *launchTemplate) map[string]string { return s.ec2.tags[t.id] },
		key:  func(t *launchTemplate) string { return t.id },
		item: s.templateXML,
	}, func() ([]*launchTemplate, func(*launchTemplate) bool, error) {
		var sel []*launchTemplate
		for _, id := range strList(form, "LaunchTemplateId") {
			t, err := s.templateByIDOrName(region, id, "")
			if err != nil {
				return nil, nil, err
			}
			sel = append(sel, t)
		}
		for _, n := range strList(form, "LaunchTemplateName") {
			t, err := s.templateByIDOrName(region, "", n)
			if err != nil {
				return nil, nil, errorf("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
			}
			sel = append(sel, t)
		}
		var keep func(*launchTemplate) bool
		if len(sel) > 0 {
			keep = func(t *launchTemplate) bool { return slices.Contains(sel, t) }
		}
		return inIDOrder(s.ec2.templates, func(t *launchTemplate) bool { return t.region == region }), keep, nil
	})
}

// describeLaunchTemplateVersions describes versions of one template (LaunchTemplateId or LaunchTemplateName), or,
// with neither, the $Latest and/or $Default versions of every template of the region (as EC2 does).
func (s *Server) describeLaunchTemplateVersions(region string, form url.Values) (any, error) {
	type templateVersion struct {
		t *launchTemplate
		v *ltVersion
	}
	return describe(form, describer[templateVersion, ltVersionXML]{dialect: ec2Dialect, set: "launchTemplateVersionSet", minMax: 1, maxMax: 200,
		filters: []string{"image-id", "instance-type", "is-default-version", "iam-instance-profile"},
		field: fields(func(tv templateVersion) map[string][]string {
			d := tv.v.data
			return map[string][]string{"image-id": {d.ImageID}, "instance-type": {d.InstanceType},
				"is-default-version": {boolStr(tv.v.number == tv.t.defaultVersion)}, "iam-instance-profile": {d.ProfileName, d.ProfileArn}}
		}),
		key:  func(tv templateVersion) string { return tv.t.id + "/" + strconv.FormatInt(1e12+tv.v.number, 10) },
		item: func(tv templateVersion) ltVersionXML { return versionXML(tv.t, tv.v) },
	}, func() ([]templateVersion, func(templateVersion) bool, error) {
		want := strList(form, "LaunchTemplateVersion")
		var templates []*launchTemplate
		if form.Get("LaunchTemplateId") == "" && form.Get("LaunchTemplateName") == "" {
			if len(want) == 0 {
				return nil, nil, errorf("MissingParameter", "The request must contain the parameter LaunchTemplateName or LaunchTemplateId, or only the versions $Latest and $Default")
			}
			for _, w := range want {
				if w != "$Latest" && w != "$Default" {
					return nil, nil, errorf("InvalidParameterCombination", "Without a launch template, only the versions $Latest and $Default can be described, not %s", w)
				}
			}
			templates = inIDOrder(s.ec2.templates, func(t *launchTemplate) bool { return t.region == region })
		} else {
			t, err := s.template(region, form)
			if err != nil {
				return nil, nil, err
			}
			templates = []*launchTemplate{t}
		}
		var all []templateVersion
		for _, t := range templates {
			vs, err := t.versionsAsked(form, want)
			if err != nil {
				return nil, nil, err
			}
			for _, v := range vs {
				all = append(all, templateVersion{t, v})
			}
		}
		return all, nil, nil
	})
}

// versionsAsked are the versions of t a DescribeLaunchTemplateVersions asks for, in version order: those it names
// (want), or those between its MinVersion and MaxVersion.
func (t *launchTemplate) versionsAsked(form url.Values, want []string) ([]*ltVersion, error) {
	var vs []*ltVersion
	if len(want) > 0 {
		for _, w := range want {
			v, err := t.version(w)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
		slices.SortFunc(vs, func(a, b *ltVersion) int { return int(a.number - b.number) })
		return vs, nil
	}
	minV, _, err := intParam(form, "MinVersion")
	if err != nil {
		return nil, err
	}
	maxV, maxSet, err := intParam(form, "MaxVersion")
	if err != nil {
		return nil, err
	}
	for _, v := range t.versions {
		if v != nil && v.number >= minV && (!maxSet || v.number <= maxV) {
			vs = append(vs, v)
		}
	}
	return vs, nil
}

func (s *Server) deleteLaunchTemplate(region string, form url.Values) (any, error) {
	t, err := s.template(region, form)
	if err != nil {
		return nil, err
	}
	x := s.templateXML(t)
	delete(s.ec2.templates, t.id)
	delete(s.ec2.tags, t.id)
	return struct {
		RequestID string            `xml:"requestId"`
		Template  launchTemplateXML `xml:"launchTemplate"`
	}{"fake-request", x}, nil
}
