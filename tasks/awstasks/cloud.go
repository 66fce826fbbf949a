package awstasks

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// Cloud is the world of an AWS cloud graph: the SDK clients of one configuration, the cluster whose resources
// the tasks manage (everything kubeup makes carries the tag kubernetes.io/cluster/<Cluster>=owned), the state
// store, and the batched reads the tasks' Finds share.
//
// The reads are made once per run: the first Find of a type (EBS volumes, security groups, launch templates,
// Auto Scaling groups, the subnets of a VPC, ...) makes one paginated Describe call, and every other Find of that
// type, concurrent or later, reads its answer. A Render that changes a type, or fails, forgets that type's
// answer, so that a task that is retried reads the world again. NewRun forgets everything.
type Cloud struct {
	EC2         *ec2.Client
	AutoScaling *autoscaling.Client
	IAM         *iam.Client
	Route53     *route53.Client

	Region  string
	Cluster string
	Store   storetasks.Store

	dnsZone string
	dnsOnce sync.Once
	dns     dnstasks.Provider

	reads *reads
}

var (
	_ dnstasks.World   = (*Cloud)(nil)
	_ storetasks.World = (*Cloud)(nil)
)

// NewCloud returns the cloud of cluster in the region of cfg, with the DNS records of the hosted zone dnsZone
// ("example.com"; empty: the cluster has no DNS) and the state store. Nothing is read yet. Its clients send
// request bodies of their own (awssdk.OwnBodies).
func NewCloud(cfg aws.Config, cluster, dnsZone string, store storetasks.Store) *Cloud {
	cfg = allservices.WithOwnedBodies(cfg)
	return &Cloud{
		EC2:         ec2.NewFromConfig(cfg),
		AutoScaling: autoscaling.NewFromConfig(cfg),
		IAM:         iam.NewFromConfig(cfg),
		Route53:     route53.NewFromConfig(cfg),
		Region:      cfg.Region,
		Cluster:     cluster,
		Store:       store,
		dnsZone:     dnsZone,
		reads:       &reads{},
	}
}

// DNSProvider returns the Route53 provider of the cluster's hosted zone, made once per Cloud.
func (c *Cloud) DNSProvider() dnstasks.Provider {
	c.dnsOnce.Do(func() {
		if c.dnsZone == "" {
			c.dns = noDNS{}
			return
		}
		c.dns = NewRoute53(c.Route53, c.dnsZone)
	})
	return c.dns
}

// StateStore returns the state store.
func (c *Cloud) StateStore() storetasks.Store { return c.Store }

// NewRun forgets every batched read, the DNS provider's included: the next Finds read the world again. cloudup
// calls it before each engine run on one Cloud.
func (c *Cloud) NewRun() {
	c.reads.forgetAll()
	if r, ok := c.DNSProvider().(interface{ NewRun() }); ok {
		r.NewRun()
	}
}

// ReadsLagWrites reports that AWS's reads lag its writes: a volume, security group or launch template just made
// may be missing from the Describe calls for a while (EC2's eventual consistency). After an apply, cloudup then
// checks with dry runs that the cloud shows what was made before it says the cluster is up to date.
func (c *Cloud) ReadsLagWrites() bool { return true }

// ClusterTag returns the tag key that marks what cluster owns: kubernetes.io/cluster/<cluster>. Its value is
// "owned".
func ClusterTag(cluster string) string { return "kubernetes.io/cluster/" + cluster }

// ownedValue is the value of the cluster tag on what the cluster made and its deletion deletes.
const ownedValue = "owned"

// noDNS is the DNS provider of a cluster without a DNS zone: every call that would need one fails.
type noDNS struct{}

var errNoDNS = fmt.Errorf("the cluster has no DNS zone (spec.dnsZone): its records cannot be managed")

func (noDNS) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	return nil, errNoDNS
}
func (noDNS) Upsert(ctx context.Context, rs dnstasks.RecordSet) error { return errNoDNS }
func (noDNS) Delete(ctx context.Context, name, rrtype string) error   { return errNoDNS }
func (noDNS) List(ctx context.Context) ([]dnstasks.RecordSet, error)  { return nil, nil }
