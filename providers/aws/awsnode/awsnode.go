// Package awsnode is the aws provider's node side: protokube on an EC2 instance learns who it is from IMDS,
// claims EBS volumes and Route53 records, and keeps kubenet's routes in the VPC's route tables (docs/aws.md). It registers the cloud "aws" with protokube/nodecloud;
// cmd/protokube-aws links it.
package awsnode

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/route53"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/awssdk"
	"kubeup.dev/kubeup/internal/awssdk/allservices"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/protokube/nodecloud"
	"kubeup.dev/kubeup/tasks/awstasks"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// awsCloud is this instance on AWS: its identity, as the instance metadata service (IMDSv2) tells it, and the
// SDK clients of its region. It is made on the first round and kept, so that the Route53 provider keeps the
// hosted zone it found; each round forgets the records the former one read.
type awsCloud struct {
	instance     volumetasks.Holder
	zone, region string
	cfg          aws.Config // the region's configuration, as awstasks.NewCloud takes it
	ec2          *ec2.Client
	route53      *route53.Client

	volumes *awstasks.Volumes
	dns     *awstasks.Route53
	dnsZone string // the zone dns is of
	me      volumetasks.Holder
	// routes is the world of kubenet's routes (the VPC's route tables, the cluster's instances), made on the
	// first round that asks for them and kept.
	routes *awstasks.Cloud
}

var _ nodecloud.Router = (*awsCloud)(nil)

func init() {
	nodecloud.Register(model.CloudAWS, func(ctx context.Context) (nodecloud.Instance, error) { return newAWSCloud(ctx) })
}

// newAWSCloud asks IMDS who this instance is, and configures the SDK for its region (the usual credential
// chain: the instance profile's role on EC2; AWS_ENDPOINT_URL points the clients elsewhere, and
// AWS_EC2_METADATA_SERVICE_ENDPOINT the metadata service).
func newAWSCloud(ctx context.Context) (*awsCloud, error) {
	base, err := config.LoadDefaultConfig(ctx, config.WithLogger(awssdk.Logger))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	me, zone, region, err := awstasks.InstanceIdentity(ctx, base)
	if err != nil {
		return nil, err
	}
	cfg, err := awstasks.LoadConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	owned := allservices.WithOwnedBodies(cfg)
	return &awsCloud{instance: me, zone: zone, region: region, cfg: cfg, ec2: ec2.NewFromConfig(owned), route53: route53.NewFromConfig(owned)}, nil
}

// Identity is who the cloud says this instance is.
func (c *awsCloud) Identity() volumetasks.Holder { return c.instance }

// Providers returns the EBS volumes of this instance's zone, claimed as me, and the Route53 provider of the
// configuration's DNS zone, which forgets what it read in the former round.
func (c *awsCloud) Providers(pc *model.ProtokubeConfig, root string, me volumetasks.Holder) (volumetasks.Provider, dnstasks.Provider, error) {
	zone := pc.Zone
	if zone == "" {
		zone = c.zone
	}
	if zone != c.zone {
		return nil, nil, fmt.Errorf("protokube: the node configuration is of zone %s, but instance %s runs in %s (IMDS): an EBS volume attaches to an instance of its own zone only; run this instance group's instances in %s",
			zone, c.instance.NodeID, c.zone, zone)
	}
	if pc.DNSZone == "" {
		return nil, nil, fmt.Errorf("protokube: the node configuration names no DNS zone (spec.dnsZone): on AWS the records go to a Route53 hosted zone")
	}
	if c.volumes == nil || c.me != me {
		c.volumes, c.me = awstasks.NewVolumes(c.ec2, me, zone, awstasks.VolumesOptions{Root: root}), me
	}
	if c.dns == nil || c.dnsZone != pc.DNSZone {
		c.dns, c.dnsZone = awstasks.NewRoute53(c.route53, pc.DNSZone), pc.DNSZone
	}
	c.volumes.NewRun()
	c.dns.NewRun()
	return c.volumes, c.dns, nil
}

// PodRoutes returns the tasks of kubenet's routes on AWS (awstasks.PlanPodRoutes): each pod range to its Node's
// instance in every route table the cluster's subnets use, and those instances' source/destination check off.
// It reads the cluster's instances and its VPC's route tables once.
func (c *awsCloud) PodRoutes(ctx context.Context, spec nodecloud.PodRoutesSpec) (nodecloud.PodRoutes, error) {
	if c.routes == nil || c.routes.Cluster != spec.Cluster {
		c.routes = awstasks.NewCloud(c.cfg, spec.Cluster, "", nil)
	}
	c.routes.NewRun()
	plan, err := c.routes.PlanPodRoutes(ctx, spec.PodCIDR, spec.Routes)
	if err != nil {
		return nodecloud.PodRoutes{}, err
	}
	out := nodecloud.PodRoutes{Unmatched: plan.Unmatched}
	for _, t := range plan.Tables {
		out.Tasks = append(out.Tasks, engine.Bind(t, c.routes))
	}
	for _, t := range plan.Checks {
		out.Tasks = append(out.Tasks, engine.Bind(t, c.routes))
	}
	return out, nil
}
