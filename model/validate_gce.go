package model

import (
	"regexp"
	"slices"
	"strings"

	"kubeup.dev/kubeup/internal/gcelabels"
)

func init() {
	cloudModels[CloudGCE] = cloudModel{
		complete:    completeGCE,
		machineType: "e2-standard-2", image: "debian-cloud/debian-12", volumeType: "pd-ssd",
		validate:              validateGCE,
		validateInstanceGroup: func(ps *problems, _ *Cluster, ig *InstanceGroup) { validateGCEInstanceGroup(ps, ig) },
		volumeTypes:           []string{"pd-standard", "pd-balanced", "pd-ssd", "pd-extreme", "hyperdisk-balanced"},
		fetchesNodeup:         true,
		nodeBinaries:          CloudGCE,
		encrypts:              true,
		section:               "spec.gce",
		set:                   func(s *ClusterSpec) bool { return s.GCE != nil },
		createFlags: func(o NewClusterOptions) []createFlag {
			return []createFlag{{"--project", o.Project != ""}, {"--network", o.Network != ""}, {"--subnetwork", len(o.Subnetworks) > 0}}
		},
		create: func(s *ClusterSpec, o NewClusterOptions) error {
			if o.Network == "" && len(o.Subnetworks) == 0 {
				return nil
			}
			subnetworks, err := parseSubnetworks(o.Subnetworks, o.Zones)
			if err != nil {
				return err
			}
			s.GCE = &GCESpec{Network: o.Network, Subnetworks: subnetworks}
			return nil
		},
	}
}

// The syntax of GCE's names that the spec carries.
var (
	// gceResourceName is the name of a GCE resource (network, subnetwork, disk, firewall rule, template): RFC 1035,
	// 1-63 characters.
	gceResourceName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// gceProject is a project id of at most 30 characters, optionally domain-scoped (example.com:my-project). GCP
	// asks 6 at least for the projects it makes; emulators and fakes use shorter ones ("p"), so kubeup does not.
	gceProject = regexp.MustCompile(`^([a-z][-a-z0-9.]{0,61}[a-z0-9]:)?[a-z]([-a-z0-9]{0,28}[a-z0-9])?$`)
	// gceZone is REGION-LETTER: europe-west1-b, us-central1-a.
	gceZone = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+-[a-z]$`)
	// gceServiceAccountEmail is a service account's email: NAME@PROJECT.iam.gserviceaccount.com, or the Compute
	// Engine default account NUMBER-compute@developer.gserviceaccount.com.
	gceServiceAccountEmail = regexp.MustCompile(`^[a-z0-9][-a-z0-9]{0,62}@[a-z0-9][-a-z0-9.:]*\.[a-z]+$`)
	// gceMachineType is FAMILY-TYPE[-N]: e2-standard-2, n2-custom-4-8192, f1-micro.
	gceMachineType = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)+$`)
	// gceImage is an image as spec.image names it (GCEImage): PROJECT/FAMILY (debian-cloud/debian-12), an image
	// NAME of the cluster's project, a projects/... path or a URL of one.
	gceImage = regexp.MustCompile(`^(([a-z][-a-z0-9.:]*[a-z0-9]/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?|(https://[a-z.]+/compute/v1/)?projects/[a-z][-a-z0-9.:]*[a-z0-9]/global/images/(family/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?)$`)
)

// maxGCEName is the longest name of a GCE resource.
const MaxGCEName = 63

// validateGCE checks spec.gce and what else a gce cluster needs: its project, its zones, and its state store on
// Google Cloud Storage (the machines read their configuration there at boot).
func validateGCE(ps *problems, s *ClusterSpec) {
	switch {
	case s.Project == "":
		ps.add("spec.project", "required for cloudProvider gce: the GCP project id (kubeup create cluster --project)")
	case !gceProject.MatchString(s.Project):
		ps.add("spec.project", "%q is not a GCP project id: at most 30 lower-case letters, digits and '-', starting with a letter (my-project-123)", s.Project)
	}
	for i, z := range s.Zones {
		if zoneName.MatchString(z) && !gceZone.MatchString(z) {
			ps.add(Index("spec.zones", i), "%q is not a GCE zone: want REGION-LETTER, for example europe-west1-b", z)
		}
	}
	if s.ConfigBase != "" && !strings.HasPrefix(s.ConfigBase, "gs://") {
		ps.add("spec.configBase", "%q: nodes read their configuration from the state store: a gce cluster's store must be gs://BUCKET (set KUBEUP_STATE_STORE or --state to a gs:// URL)", s.ConfigBase)
	}
	const p = "spec.gce"
	g := s.GCE
	if g == nil {
		ps.add(p, "required for cloudProvider gce: network and one subnetwork per region")
		return
	}
	checkGCEName := func(field, v, what string) {
		switch {
		case v == "":
			ps.add(field, "required: %s", what)
		case !gceResourceName.MatchString(v):
			ps.add(field, "%q is not a GCE name: 1-63 lower-case letters, digits and '-', starting with a letter and not ending with '-'", shorten(v))
		}
	}
	checkGCEName(p+".network", g.Network, "the name of the VPC network the cluster runs in (kubeup create cluster --network)")
	regions := GCERegions(s.Zones)
	if len(g.Subnetworks) == 0 {
		ps.add(p+".subnetworks", "required: one subnetwork per region of spec.zones %v, each {region: REGION, name: NAME} (kubeup create cluster --subnetwork)", regions)
	}
	seen := map[string]bool{}
	for i, sn := range g.Subnetworks {
		sp := Index(p+".subnetworks", i)
		switch {
		case sn.Region == "":
			ps.add(sp+".region", "required: one of the regions of spec.zones %v", regions)
		case !slices.Contains(regions, sn.Region):
			ps.add(sp+".region", "%q is not a region of spec.zones %v", sn.Region, regions)
		case seen[sn.Region]:
			ps.add(sp+".region", "%q has another subnetwork already: one subnetwork per region", sn.Region)
		}
		seen[sn.Region] = true
		checkGCEName(sp+".name", sn.Name, "the subnetwork's name")
	}
	if len(g.Subnetworks) > 0 {
		for _, r := range regions {
			if !seen[r] {
				ps.add(p+".subnetworks", "region %q has no subnetwork: add {region: %s, name: NAME}", r, r)
			}
		}
	}
	if sa := g.ServiceAccount; sa != DefaultGCEServiceAccount && !gceServiceAccountEmail.MatchString(sa) {
		ps.add(p+".serviceAccount", "%q is not a service account: want its email (NAME@PROJECT.iam.gserviceaccount.com) or %q", shorten(sa), DefaultGCEServiceAccount)
	}
	validateCIDRList(ps, p+".apiAccess", g.APIAccess)
	validateCIDRList(ps, p+".sshAccess", g.SSHAccess)
	// Each etcd disk's label names every member of its cluster (gcetasks' encoding of EtcdVolumeTags): key and
	// value must fit GCE's 63 characters.
	for i, e := range s.EtcdClusters {
		if k := gcelabels.EtcdLabelKey(e.Name); len(k) > maxGCELabel {
			ps.add(Index("spec.etcdClusters", i)+".name", "the members' disk label key %q would be %d characters, more than the %d GCE takes: use a name of at most %d characters",
				shorten(k), len(k), maxGCELabel, maxGCELabel-len(k)+len(e.Name))
			continue
		}
		for j, m := range e.Members {
			labels, err := gcelabels.EncodeTags(map[string]string{EtcdTagKey(e.Name): EtcdVolumeTags("", e, m)[EtcdTagKey(e.Name)]})
			if v := labels[gcelabels.EtcdLabelKey(e.Name)]; err == nil && len(v) <= maxGCELabel {
				continue
			}
			v := EtcdVolumeTags("", e, m)[EtcdTagKey(e.Name)]
			ps.add(Index(Index("spec.etcdClusters", i)+".members", j)+".name", "the member's disk label %s (%q, every member's name) would be more than the %d characters GCE takes a label value: use shorter member names",
				gcelabels.EtcdLabelKey(e.Name), shorten(v), maxGCELabel)
		}
	}
}

// maxGCELabel is the longest label key or value GCE takes.
const maxGCELabel = 63

// validateGCEInstanceGroup checks what a gce instance group adds: a GCE machine type and image.
func validateGCEInstanceGroup(ps *problems, ig *InstanceGroup) {
	p := igPrefix(ig.Metadata.Name)
	s := &ig.Spec
	if s.MachineType != "" && machineType.MatchString(s.MachineType) && !gceMachineType.MatchString(s.MachineType) {
		ps.add(p+"spec.machineType", "%q is not a GCE machine type: want lower-case FAMILY-TYPE, for example e2-standard-2", s.MachineType)
	}
	if s.Image != "" && !gceImage.MatchString(s.Image) {
		ps.add(p+"spec.image", "%q is not a GCE image: want PROJECT/FAMILY (debian-cloud/debian-12), an image NAME of the project, or projects/PROJECT/global/images/[family/]NAME", shorten(s.Image))
	}
}
