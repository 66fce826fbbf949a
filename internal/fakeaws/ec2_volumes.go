package fakeaws

import (
	"net/url"
	"regexp"
	"time"
)

// EBS volumes and their attachments.
//
// A volume is "available" (the answer of CreateVolume says "creating", as EC2's does), "in-use" while attached.
// Eventual consistency (Faults): a new volume is left out of the next VolumeInvisibleCalls DescribeVolumes answers
// of its region, whatever they ask for (asked for by id it is InvalidVolume.NotFound); a new attachment is
// "attaching" in the next AttachingPolls DescribeVolumes answers that show the volume, then "attached". The
// answer of AttachVolume always says "attaching". A detachment is immediate (its answer says "detaching").

type volume struct {
	id, region, zone, typ, kmsKey string
	size, iops, throughput        int32
	encrypted                     bool
	created                       time.Time
	// invisible is how many more DescribeVolumes answers leave the volume out.
	invisible int
	att       *attachment
}

type attachment struct {
	instance, device string
	at               time.Time
	// polls is how many more DescribeVolumes answers show the attachment "attaching".
	polls int
}

type attachmentXML struct {
	VolumeID            string `xml:"volumeId"`
	InstanceID          string `xml:"instanceId"`
	Device              string `xml:"device"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type volumeXML struct {
	VolumeID           string              `xml:"volumeId"`
	Size               int32               `xml:"size"`
	SnapshotID         string              `xml:"snapshotId"`
	AvailabilityZone   string              `xml:"availabilityZone"`
	AvailabilityZoneID string              `xml:"availabilityZoneId"`
	Status             string              `xml:"status"`
	CreateTime         string              `xml:"createTime"`
	Attachments        list[attachmentXML] `xml:"attachmentSet"`
	Tags               *list[tagXML]       `xml:"tagSet"`
	VolumeType         string              `xml:"volumeType"`
	Iops               int32               `xml:"iops,omitempty"`
	Throughput         int32               `xml:"throughput,omitempty"`
	Encrypted          bool                `xml:"encrypted"`
	KmsKeyID           string              `xml:"kmsKeyId,omitempty"`
	MultiAttachEnabled bool                `xml:"multiAttachEnabled"`
}

func (s *Server) volumeXML(v *volume) volumeXML {
	x := volumeXML{VolumeID: v.id, Size: v.size, AvailabilityZone: v.zone, AvailabilityZoneID: zoneID(v.zone),
		Status: "available", CreateTime: timestamp(v.created), VolumeType: v.typ, Iops: v.iops, Throughput: v.throughput,
		Encrypted: v.encrypted, KmsKeyID: v.kmsKey}
	if t := s.ec2.tags[v.id]; len(t) > 0 {
		l := tagList(t)
		x.Tags = &l
	}
	if a := v.att; a != nil {
		x.Status = "in-use"
		x.Attachments.Items = []attachmentXML{{VolumeID: v.id, InstanceID: a.instance, Device: a.device,
			Status: a.status(), AttachTime: timestamp(a.at)}}
	}
	return x
}

func (a *attachment) status() string {
	if a.polls > 0 {
		return "attaching"
	}
	return "attached"
}

var volumeTypes = map[string]bool{"standard": true, "gp2": true, "gp3": true, "io1": true, "io2": true, "st1": true, "sc1": true}

// volumeSpec checks and completes a volume's type, size, iops and throughput.
func volumeSpec(typ string, size, iops, throughput int32, iopsSet, throughputSet bool) (int32, int32, error) {
	if !volumeTypes[typ] {
		return 0, 0, errorf("InvalidParameterValue", "Value (%s) for parameter volumeType is invalid. Valid values: standard, gp2, gp3, io1, io2, st1, sc1", typ)
	}
	if size < 1 || size > 16384 {
		return 0, 0, errorf("InvalidParameterValue", "Volume of %dGiB is out of range (1 to 16384)", size)
	}
	switch typ {
	case "gp3":
		if !iopsSet {
			iops = 3000
		}
		if !throughputSet {
			throughput = 125
		}
		if iops < 3000 || iops > 16000 {
			return 0, 0, errorf("InvalidParameterValue", "Volume iops of %d is out of range (3000 to 16000) for gp3", iops)
		}
		if throughput < 125 || throughput > 1000 {
			return 0, 0, errorf("InvalidParameterValue", "Volume throughput of %d is out of range (125 to 1000) for gp3", throughput)
		}
	case "io1", "io2":
		if !iopsSet {
			return 0, 0, errorf("MissingParameter", "The parameter iops must be specified for %s volumes.", typ)
		}
		if throughputSet {
			return 0, 0, errorf("InvalidParameterCombination", "The parameter throughput is not supported for %s volumes.", typ)
		}
		throughput = 0
	default:
		if iopsSet && typ != "gp2" || throughputSet {
			return 0, 0, errorf("InvalidParameterCombination", "The parameters iops and throughput are not supported for %s volumes.", typ)
		}
		if iopsSet {
			return 0, 0, errorf("InvalidParameterCombination", "The parameter iops is not supported for gp2 volumes.")
		}
		iops, throughput = 0, 0
		if typ == "gp2" {
			iops = max(100, min(16000, 3*size))
		}
	}
	return iops, throughput, nil
}

func (s *Server) createVolume(region string, form url.Values) (any, error) {
	if prev, err := s.tokenAnswerFor(region, form); prev != nil || err != nil {
		return prev, err
	}
	zone, err := required(form, "AvailabilityZone")
	if err != nil {
		return nil, err
	}
	if !validZone(region, zone) {
		return nil, zoneError(zone)
	}
	size, ok, err := intParam(form, "Size")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf("MissingParameter", "The request must contain the parameter size or snapshotId")
	}
	typ := form.Get("VolumeType")
	if typ == "" {
		typ = "gp2"
	}
	iops, iopsSet, err := intParam(form, "Iops")
	if err != nil {
		return nil, err
	}
	tput, tputSet, err := intParam(form, "Throughput")
	if err != nil {
		return nil, err
	}
	i, t, err := volumeSpec(typ, int32(size), int32(iops), int32(tput), iopsSet, tputSet)
	if err != nil {
		return nil, err
	}
	encrypted, _, err := boolParam(form, "Encrypted")
	if err != nil {
		return nil, err
	}
	kms := form.Get("KmsKeyId")
	if kms != "" && !encrypted {
		return nil, errorf("InvalidParameterDependency", "The parameter KmsKeyId requires the parameter Encrypted to be set.")
	}
	if encrypted && kms == "" {
		kms = "arn:aws:kms:" + region + ":" + AccountID + ":key/00000000-0000-4000-8000-000000000ebs"
	}
	specs, err := tagSpecs(form, "TagSpecification", "volume")
	if err != nil {
		return nil, err
	}
	v := &volume{id: s.newID("vol"), region: region, zone: zone, typ: typ, size: int32(size), iops: i, throughput: t,
		encrypted: encrypted, kmsKey: kms, created: time.Now(), invisible: s.faults.VolumeInvisibleCalls}
	s.ec2.volumes[v.id] = v
	s.setTags(v.id, specs["volume"])
	x := s.volumeXML(v)
	x.Status = "creating"
	answer := struct {
		RequestID string `xml:"requestId"`
		volumeXML
	}{"fake-request", x}
	s.rememberToken(region, form, answer)
	return answer, nil
}

func (s *Server) describeVolumes(region string, form url.Values) (any, error) {
	return describe(form, describer[*volume, volumeXML]{dialect: ec2Dialect, set: "volumeSet", minMax: 5, maxMax: 500,
		filters: []string{"volume-id", "availability-zone", "status", "volume-type", "size", "encrypted", "attachment.instance-id",
			"attachment.device", "attachment.status", "attachment.delete-on-termination"},
		field: func(v *volume, name string) []string {
			switch name {
			case "volume-id":
				return []string{v.id}
			case "availability-zone":
				return []string{v.zone}
			case "status":
				return []string{s.volumeXML(v).Status}
			case "volume-type":
				return []string{v.typ}
			case "size":
				return i32s(v.size)
			case "encrypted":
				return []string{boolStr(v.encrypted)}
			}
			if v.att == nil {
				return nil
			}
			return map[string][]string{"attachment.delete-on-termination": {"false"}, "attachment.instance-id": {v.att.instance},
				"attachment.device": {v.att.device}, "attachment.status": {v.att.status()}}[name]
		},
		tags: func(v *volume) map[string]string { return s.ec2.tags[v.id] },
		key:  func(v *volume) string { return v.id },
		item: func(v *volume) volumeXML {
			x := s.volumeXML(v)
			if v.att != nil && v.att.polls > 0 {
				v.att.polls--
			}
			return x
		},
	}, func() ([]*volume, func(*volume) bool, error) {
		return byID(form, ids{"VolumeId", "vol", "InvalidVolume.Malformed", "volumeSet"}, func() []*volume {
			// A new volume is left out of its first answers (Faults.VolumeInvisibleCalls), whatever they ask for.
			return inIDOrder(s.ec2.volumes, func(v *volume) bool {
				if v.region != region {
					return false
				}
				if v.invisible > 0 {
					v.invisible--
					return false
				}
				return true
			})
		}, func(v *volume) string { return v.id })
	})
}

// volume is volume id of region, or InvalidVolume.NotFound.
func (s *Server) volume(region, id string) (*volume, error) {
	if id == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter VolumeId")
	}
	v, ok := s.ec2.volumes[id]
	if !ok || v.region != region {
		return nil, notFound(id)
	}
	return v, nil
}

func (s *Server) deleteVolume(region string, form url.Values) (any, error) {
	v, err := s.volume(region, form.Get("VolumeId"))
	if err != nil {
		return nil, err
	}
	if v.att != nil {
		return nil, errorf("VolumeInUse", "Volume %s is currently attached to %s", v.id, v.att.instance)
	}
	delete(s.ec2.volumes, v.id)
	delete(s.ec2.tags, v.id)
	return nil, nil
}

func (s *Server) modifyVolume(region string, form url.Values) (any, error) {
	v, err := s.volume(region, form.Get("VolumeId"))
	if err != nil {
		return nil, err
	}
	size, sizeSet, err := intParam(form, "Size")
	if err != nil {
		return nil, err
	}
	iops, iopsSet, err := intParam(form, "Iops")
	if err != nil {
		return nil, err
	}
	tput, tputSet, err := intParam(form, "Throughput")
	if err != nil {
		return nil, err
	}
	typ := form.Get("VolumeType")
	if !sizeSet && !iopsSet && !tputSet && typ == "" {
		return nil, errorf("MissingParameter", "The request must contain at least one of the parameters size, volumeType, iops, throughput")
	}
	newSize := v.size
	if sizeSet {
		if int32(size) < v.size {
			return nil, errorf("InvalidParameterValue", "New size cannot be smaller than existing size")
		}
		newSize = int32(size)
	}
	newType := v.typ
	if typ != "" {
		newType = typ
	}
	// What is not given is kept, when the new type takes it.
	if !iopsSet && (newType == "gp3" && v.typ == "gp3" || (newType == "io1" || newType == "io2") && (v.typ == "io1" || v.typ == "io2")) {
		iops, iopsSet = int64(v.iops), true
	}
	if !tputSet && newType == "gp3" && v.typ == "gp3" {
		tput, tputSet = int64(v.throughput), true
	}
	i, t, err := volumeSpec(newType, newSize, int32(iops), int32(tput), iopsSet, tputSet)
	if err != nil {
		return nil, err
	}
	type modXML struct {
		VolumeID           string `xml:"volumeId"`
		ModificationState  string `xml:"modificationState"`
		TargetSize         int32  `xml:"targetSize"`
		TargetIops         int32  `xml:"targetIops,omitempty"`
		TargetVolumeType   string `xml:"targetVolumeType"`
		TargetThroughput   int32  `xml:"targetThroughput,omitempty"`
		OriginalSize       int32  `xml:"originalSize"`
		OriginalIops       int32  `xml:"originalIops,omitempty"`
		OriginalVolumeType string `xml:"originalVolumeType"`
		OriginalThroughput int32  `xml:"originalThroughput,omitempty"`
		Progress           int64  `xml:"progress"`
		StartTime          string `xml:"startTime"`
	}
	m := modXML{VolumeID: v.id, ModificationState: "modifying", TargetSize: newSize, TargetIops: i, TargetVolumeType: newType,
		TargetThroughput: t, OriginalSize: v.size, OriginalIops: v.iops, OriginalVolumeType: v.typ,
		OriginalThroughput: v.throughput, StartTime: timestamp(time.Now())}
	v.size, v.typ, v.iops, v.throughput = newSize, newType, i, t
	return struct {
		RequestID    string `xml:"requestId"`
		Modification modXML `xml:"volumeModification"`
	}{"fake-request", m}, nil
}

// deviceName is a name EBS takes: /dev/sd[b-z] or /dev/xvd[b-z], with an optional second letter.
var deviceName = regexp.MustCompile(`^/dev/(sd[a-z][a-z]?|xvd[a-z][a-z]?)$`)

func (s *Server) attachVolume(region string, form url.Values) (any, error) {
	device, err := required(form, "Device")
	if err != nil {
		return nil, err
	}
	inst, err := s.instance(region, form.Get("InstanceId"))
	if err != nil {
		return nil, err
	}
	v, err := s.volume(region, form.Get("VolumeId"))
	if err != nil {
		return nil, err
	}
	if !deviceName.MatchString(device) {
		return nil, errorf("InvalidParameterValue", "Value (%s) for parameter device is invalid. %s is not a valid EBS device name.", device, device)
	}
	if v.att != nil {
		return nil, errorf("VolumeInUse", "%s is already attached to an instance", v.id)
	}
	if inst.state != "running" {
		return nil, errorf("IncorrectInstanceState", "The instance '%s' is not in the 'running' state.", inst.id)
	}
	if inst.zone != v.zone {
		return nil, errorf("InvalidVolume.ZoneMismatch", "The volume '%s' is not in the same availability zone as instance '%s'", v.id, inst.id)
	}
	if device == rootDevice || s.volumeAt(inst.id, device) != nil {
		return nil, errorf("InvalidParameterValue", "Invalid value '%s' for unixDevice. Attachment point %s is already in use", device, device)
	}
	v.att = &attachment{instance: inst.id, device: device, at: time.Now(), polls: s.faults.AttachingPolls}
	return struct {
		RequestID string `xml:"requestId"`
		attachmentXML
	}{"fake-request", attachmentXML{VolumeID: v.id, InstanceID: inst.id, Device: device, Status: "attaching", AttachTime: timestamp(v.att.at)}}, nil
}

// volumeAt is the volume attached to instance at device, or nil.
func (s *Server) volumeAt(instance, device string) *volume {
	for _, v := range s.ec2.volumes {
		if v.att != nil && v.att.instance == instance && v.att.device == device {
			return v
		}
	}
	return nil
}

func (s *Server) detachVolume(region string, form url.Values) (any, error) {
	v, err := s.volume(region, form.Get("VolumeId"))
	if err != nil {
		return nil, err
	}
	if v.att == nil {
		return nil, errorf("IncorrectState", "Volume '%s' is in the 'available' state.", v.id)
	}
	if id := form.Get("InstanceId"); id != "" && id != v.att.instance {
		return nil, errorf("InvalidAttachment.NotFound", "Attachment point for volume '%s' on instance '%s' does not exist", v.id, id)
	}
	if d := form.Get("Device"); d != "" && d != v.att.device {
		return nil, errorf("InvalidAttachment.NotFound", "Attachment point %s for volume '%s' does not exist", d, v.id)
	}
	a := v.att
	v.att = nil
	return struct {
		RequestID string `xml:"requestId"`
		attachmentXML
	}{"fake-request", attachmentXML{VolumeID: v.id, InstanceID: a.instance, Device: a.device, Status: "detaching", AttachTime: timestamp(a.at)}}, nil
}
