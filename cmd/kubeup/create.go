package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

func newCreateCommand(g *globals) *cobra.Command {
	var file string
	var name clusterName
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a resource: a cluster or an instance group, from flags or from a file",
		Long: `Create a cluster ("kubeup create cluster") or an instance group ("kubeup create instancegroup") from flags, or
what FILE holds with "kubeup create -f FILE" ("-" for stdin): YAML documents separated by "---", as "kubeup get
-o yaml" prints them.

- A file with a Cluster creates that cluster, with the file's InstanceGroups; a cluster of that name that exists
  already is refused.
- A file of InstanceGroups alone adds them to the cluster they name with metadata.labels[kubeup.dev/cluster]
  (or to --name CLUSTER); a group of a name the cluster has already is refused.

Every document is checked first and the cluster's whole spec validated, then written in one conditional write:
an invalid document changes nothing, and the error names the file, the document (its number and line, or its
kind and name: instancegroup/NAME), the field path and the fix. The cloud is not changed until "kubeup update
cluster NAME --yes".`,
		Example: `  kubeup create -f demo.yaml
  kubeup get ig nodes --name demo.example.com -o yaml | sed 's/name: nodes/name: nodes-2/' | kubeup create -f -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			if file == "" {
				return fmt.Errorf("%s needs a subcommand: %s (see `%s --help`), or -f FILE", cmd.CommandPath(), subcommandList(cmd), cmd.CommandPath())
			}
			return createFromFile(cmd, g, file, name.flag)
		},
	}
	create.SuggestionsMinimumDistance = 2 // as requireSubcommand does for the commands that only group others
	name.addFlag(create, g)
	create.Flags().Lookup("name").Usage = "with -f: the cluster of the file's InstanceGroups when they do not name it (the file's documents must be of this cluster)"
	create.Flags().StringVarP(&file, "filename", "f", "", "create what FILE holds: a Cluster with its InstanceGroups, or InstanceGroups of an existing cluster (\"-\" for stdin)")
	create.AddCommand(newCreateClusterCommand(g), newCreateInstanceGroupCommand(g))
	return create
}

// createFromFile is create -f: a cluster with its instance groups, or instance groups of a cluster that exists.
func createFromFile(cmd *cobra.Command, g *globals, file, cluster string) error {
	ctx := cmd.Context()
	source, data, err := readSpec(cmd, file)
	if err != nil {
		return err
	}
	objs, err := model.Decode(source, data)
	if err != nil {
		return err
	}
	name, err := cloudup.ClusterOf(source, objs, cluster)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if objs.Cluster != nil {
		cs, err := g.clustersToCreate(ctx)
		if err != nil {
			return err
		}
		if err := checkZones(cmd, cs, source, objs.Cluster, objs.InstanceGroups); err != nil {
			return err
		}
		if err := cs.Create(ctx, source, objs.Cluster, objs.InstanceGroups); err != nil {
			return err
		}
		fmt.Fprintf(out, "Created cluster %s in %s with %d instance groups.\n", name, cs.Store.URL(), len(objs.InstanceGroups))
		reviewHint(out, name)
		warn(cmd, objs.Cluster)
		return nil
	}
	cs, err := g.clusters(ctx)
	if err != nil {
		return err
	}
	if _, err := cs.CreateInstanceGroups(ctx, source, name, objs.InstanceGroups, true); err != nil {
		return err
	}
	var names []string
	for _, ig := range objs.InstanceGroups {
		names = append(names, ig.Metadata.Name)
	}
	fmt.Fprintf(out, "Created instance groups %s in cluster %s.\n", strings.Join(names, ", "), name)
	reviewHint(out, name)
	return nil
}

// checkZones checks the zones of a new cluster c against its cloud (aws, gce) where it can be asked (cloudup.CheckZones):
// a zone the cloud does not have is refused, a check that could not be made is a warning. A spec that is not
// valid is not checked: creating it fails with its problems.
func checkZones(cmd *cobra.Command, cs *cloudup.Clusters, source string, c *model.Cluster, igs []*model.InstanceGroup) error {
	c = new(*c)
	if c.Spec.ConfigBase == "" {
		c.Spec.ConfigBase = cs.Store.URL() + "/" + c.Metadata.Name
	}
	full, fullIGs := model.Complete(c, igs)
	if model.Validate(source, full, fullIGs) != nil {
		return nil
	}
	warning, err := cloudup.CheckZones(cmd.Context(), source, full)
	if warning != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: cluster %s: %s\n", c.Metadata.Name, warning)
	}
	return err
}

// reviewHint tells what to run after a change of a cluster's spec.
func reviewHint(out io.Writer, cluster string) {
	fmt.Fprintf(out, "  Review the changes: kubeup update cluster %s\n", cluster)
	fmt.Fprintf(out, "  Apply them:         kubeup update cluster %s --yes\n", cluster)
}

func newCreateClusterCommand(g *globals) *cobra.Command {
	var o model.NewClusterOptions
	var name clusterName
	var dryRun bool
	var output string
	cmd := &cobra.Command{
		Use:   "cluster NAME --cloud local --zones Z1,Z2,...",
		Short: "Write a new cluster's spec to the state store",
		Long: `Write a new cluster's spec and instance groups to the state store: one control-plane instance group per
control-plane node, spread over the zones, and a "nodes" group across all of them. Nothing runs in the cloud
until "kubeup update cluster NAME --yes".

With --dry-run, print the spec (-o yaml or json) instead of writing it. -o without --dry-run is refused: it
would write the spec and print none.

The cloud is local, aws or gce. An aws cluster runs in your VPC and subnets (--vpc, and --subnets: one per zone,
their ids in the order of --zones, or ZONE=ID pairs), its machines get the IAM instance profile
--instance-profile (default kubeup), and its state store must be on S3 (--state or $KUBEUP_STATE_STORE
s3://BUCKET). A gce cluster runs in your GCP project (--project), network (--network) and subnetworks
(--subnetwork: one per region of --zones as REGION=NAME, or one NAME every region's subnetwork has), and its
state store must be on Google Cloud Storage (gs://BUCKET). The machines read their configuration in the state
store. They fetch nodeup from --nodeup-url and refuse it unless its sha256 is --nodeup-sha256; a kubeup built by
"make build" carries both for its own nodeup, a development build carries neither. A flag of another cloud is
refused.

On aws and gce, the zones are checked against the cloud's (EC2 DescribeAvailabilityZones in the region, with
the AWS SDK's usual credentials; compute zones.list of the project, with application default credentials): a
zone it does not have is refused at its spec.zones[N], with the zones of its region. When the cloud cannot be
asked (no credentials, no network, access denied), the cluster is created all the same and a warning says that
the zones were not checked ("kubeup update cluster" then fails on such a zone). "kubeup create -f" checks a
file's cluster the same way.`,
		Example: `  kubeup create cluster demo.example.com --cloud local --zones a,b,c --control-plane-count 3
  kubeup create cluster --name demo.example.com --cloud local --zones a --dry-run -o yaml
  KUBEUP_STATE_STORE=s3://my-state kubeup create cluster aws.example.com --cloud aws \
    --zones us-east-1a,us-east-1b,us-east-1c --control-plane-count 3 --dns-zone example.com \
    --vpc vpc-0123456789abcdef0 --subnets subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb,subnet-0cccccccccccccccc
  KUBEUP_STATE_STORE=gs://my-state kubeup create cluster gce.example.com --cloud gce --project my-project \
    --zones us-central1-a,us-central1-b,us-central1-c --control-plane-count 3 --dns-zone example.com \
    --network my-network --subnetwork my-subnetwork`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkDryRunOutput(cmd, dryRun, "spec"); err != nil {
				return err
			}
			if o.Name = name.optional(args); o.Name == "" {
				return fmt.Errorf("%s needs the cluster's name, a DNS name such as demo.example.com: %s NAME, or --name NAME", cmd.CommandPath(), cmd.CommandPath())
			}
			if o.CloudProvider == "" {
				return fmt.Errorf("--cloud is required: local, aws or gce")
			}
			if o.ControlPlaneCount < 1 {
				return fmt.Errorf("--control-plane-count %d: a cluster needs a control plane to run its API and etcd: use 1, 3 or 5",
					o.ControlPlaneCount)
			}
			if err := checkOutput(output, "yaml", "json"); err != nil {
				return err
			}
			c, igs, err := model.NewCluster(o)
			if err != nil {
				return err
			}
			cs, err := g.clustersToCreate(ctx)
			if err != nil {
				return err
			}
			if dryRun {
				c.Spec.ConfigBase = cs.Store.URL() + "/" + c.Metadata.Name
				full, fullIGs := model.Complete(c, igs)
				if err := model.Validate("create cluster", full, fullIGs); err != nil {
					return err
				}
				if err := checkZones(cmd, cs, "create cluster", c, igs); err != nil {
					return err
				}
				return printObjects(cmd.OutOrStdout(), output, false, objects(c, igs)...)
			}
			if err := checkZones(cmd, cs, "create cluster "+o.Name, c, igs); err != nil {
				return err
			}
			if err := cs.Create(ctx, "create cluster "+o.Name, c, igs); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Created cluster %s in %s with %d instance groups.\n", o.Name, cs.Store.URL(), len(igs))
			reviewHint(out, o.Name)
			return nil
		},
	}
	name.addFlag(cmd, nil) // a new name: nothing to complete
	f := cmd.Flags()
	f.StringVar(&o.CloudProvider, "cloud", "", "cloud provider: local, aws or gce (required)")
	f.StringSliceVar(&o.Zones, "zones", nil, "zones to run in, comma-separated (required)")
	f.IntVar(&o.ControlPlaneCount, "control-plane-count", 1, "control-plane nodes (and etcd members): 1, 3 or 5")
	f.IntVar(&o.NodeCount, "node-count", 1, "nodes in the \"nodes\" instance group; 0 leaves the group out")
	f.StringVar(&o.DNSZone, "dns-zone", "", "DNS zone of the cluster's records (default: the name's parent domain)")
	f.StringVar(&o.Project, "project", "", "gce: the GCP project (spec.project, required on gce)")
	f.StringVar(&o.KubernetesVersion, "kubernetes-version", "", "Kubernetes version (default "+model.DefaultKubernetesVersion+")")
	f.StringVar(&o.VPC, "vpc", "", "aws: the VPC to run in, vpc-... (spec.aws.vpcID)")
	f.StringSliceVar(&o.Subnets, "subnets", nil, "aws: one subnet per zone, their ids in the order of --zones (subnet-a,subnet-b), or ZONE=ID pairs")
	f.StringVar(&o.InstanceProfile, "instance-profile", "", "aws: the existing IAM instance profile of every machine (default "+model.DefaultAWSInstanceProfile+")")
	f.StringVar(&o.Network, "network", "", "gce: the VPC network to run in, by name (spec.gce.network)")
	f.StringSliceVar(&o.Subnetworks, "subnetwork", nil, "gce: one subnetwork per region of --zones as REGION=NAME, or one NAME every region's subnetwork has")
	f.StringVar(&o.NodeupURL, "nodeup-url", "", "aws and gce: where the machines download nodeup (default: the nodeup this kubeup build carries)")
	f.StringVar(&o.NodeupSHA256, "nodeup-sha256", "", "aws and gce: the sha256 of the nodeup --nodeup-url names (required with it, and by a development build)")
	f.BoolVar(&dryRun, "dry-run", false, "print the spec instead of writing it")
	f.StringVarP(&output, "output", "o", "yaml", "output format of --dry-run: yaml or json (refused without --dry-run)")
	return cmd
}
