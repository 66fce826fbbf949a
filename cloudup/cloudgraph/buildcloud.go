package cloudgraph

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// TagNode marks the machines of a Node group, as model.TagControlPlane those of a ControlPlane group.
const TagNode = "k8s.io/role/node"

// CloudWorld is what every cloud's world offers besides its own API: DNS and the state store. AddCommonTasks adds
// what every cloud's graph holds to a graph on one.
type CloudWorld interface {
	dnstasks.World
	storetasks.World
}

// LocalCloudState is what the local cloud graph needs to know of the cluster as it was last applied.
type LocalCloudState struct {
	// FormerZoneFile is the zone file the last applied complete spec kept the cluster's records in, when it is not
	// spec.local.zoneFile now ("" otherwise); FormerDNSZone the zone it held.
	FormerZoneFile, FormerDNSZone string
	// OtherClusters are the state store's clusters: the records of one named under this cluster are its own.
	OtherClusters []string
}

// BuildLocalCloudGraph returns the cloud graph of a complete, valid spec on the local provider: one volume per
// etcd member, the API's placeholder DNS records, the keystore, the complete spec and each instance group's
// node configuration in the state store; and, when spec.local.zoneFile changed since the last apply, the
// removal of the cluster's records from the former zone file (before the complete spec that names the new one is
// written: a failed run tried again still knows the former file).
func BuildLocalCloudGraph(c *model.Cluster, igs []*model.InstanceGroup, last LocalCloudState) (*engine.Graph[*localtasks.Cloud], error) {
	if c.Spec.Local == nil {
		return nil, fmt.Errorf("cluster %s: spec.local is required", c.Metadata.Name)
	}
	g := engine.NewGraph[*localtasks.Cloud]()
	for _, e := range c.Spec.EtcdClusters {
		for _, m := range e.Members {
			engine.Add(g, &localtasks.Volume{
				Name:       model.EtcdVolumeName(c.Metadata.Name, e, m),
				Zone:       ptr(m.Zone),
				SizeGB:     m.VolumeSize,
				VolumeType: m.VolumeType,
				Tags:       model.EtcdVolumeTags(c.Metadata.Name, e, m),
			})
		}
	}
	var before []engine.Task
	if last.FormerZoneFile != "" {
		before = append(before, engine.Add(g, &localtasks.FormerZoneFile{
			Path: last.FormerZoneFile, Zone: last.FormerDNSZone, Cluster: c.Metadata.Name, Others: last.OtherClusters,
		}))
	}
	if _, err := AddCommonTasks(g, c, igs, before); err != nil {
		return nil, err
	}
	return g, nil
}

// CommonTasks are the tasks of AddCommonTasks a cloud's own tasks refer to (NodeConfig).
type CommonTasks[C storetasks.World] struct {
	cluster string
	// keystore holds the cluster's keypairs.
	keystore keystore[C]
	// nodeConfigs are the tasks that write each instance group's node configuration, by the group's name.
	nodeConfigs map[string]*storetasks.SecretFile[C]
	// nodeConfig makes a group's node configuration object, once per graph (by the group's name): the task that
	// writes it and the templates that pin machines to its sha256 share one encoding.
	nodeConfig map[string]func() (engine.Secret, string, error)
}

// AddCommonTasks adds what every cloud's graph holds: the API's placeholder DNS records, the keystore, and the
// complete spec (written after the tasks of specBefore) and node configurations in the state store (those of
// groups no longer in the spec are no task: see StaleNodeConfigs). A provider's graph builder calls it once its
// own resources are added, before its machines' templates (which pin their group's node configuration).
func AddCommonTasks[C CloudWorld](g *engine.Graph[C], c *model.Cluster, igs []*model.InstanceGroup, specBefore []engine.Task) (*CommonTasks[C], error) {
	name := c.Metadata.Name
	for _, n := range []string{c.Spec.API.PublicName, c.Spec.API.InternalName} {
		engine.Add(g, &dnstasks.Record[C]{
			Name: n, Type: "A", Values: []string{model.DNSPlaceholderIPv4}, Placeholder: true,
		})
	}

	// Marked as `kubeup get --full` marks it: a copy of the stored complete spec is refused by replace.
	marked := model.DeepCopy(c)
	marked.Metadata.Annotations = model.MarkedComplete(c.Metadata.Annotations)
	objs := []any{marked}
	for _, ig := range igs {
		ig = model.DeepCopy(ig)
		ig.Metadata.Annotations = model.MarkedComplete(ig.Metadata.Annotations)
		objs = append(objs, ig)
	}
	spec, err := model.Encode(objs...)
	if err != nil {
		return nil, err
	}
	engine.Add(g, &storetasks.File[C]{Path: model.CompletedSpecPath(name), Contents: ptr(string(spec)), After: specBefore})

	ks, err := addKeystore(g, c)
	if err != nil {
		return nil, err
	}
	common := &CommonTasks[C]{cluster: name, keystore: ks, nodeConfigs: map[string]*storetasks.SecretFile[C]{},
		nodeConfig: map[string]func() (engine.Secret, string, error){}}
	// What the groups of a role share is one object, written before the groups' configurations that pin it: a
	// node that reads a group's configuration finds its role's (NodeRoleConfig).
	roleObjs := map[string]func() (nodeConfigMade, error){}
	roleTasks := map[string]*storetasks.SecretFile[C]{}
	for _, role := range groupRoles(igs) {
		roleObjs[role] = sync.OnceValues(func() (nodeConfigMade, error) {
			rc, err := model.NewNodeRoleConfig(c, role, ks.issued())
			if err != nil {
				return nodeConfigMade{}, err
			}
			obj, err := rc.Encode()
			if err != nil {
				return nodeConfigMade{}, err
			}
			return shownObject(obj)
		})
		roleTasks[role] = engine.Add(g, &storetasks.SecretFile[C]{
			Path:   model.RoleConfigPath(name, role),
			Make:   madeBy(roleObjs[role]),
			Redact: model.RedactNodeConfigObject,
			After:  ks.tasks(),
		})
	}
	for _, ig := range igs {
		// One object per group, its sha256 on its first line: one atomic write, nothing to tear. It pins its role's
		// configuration, made once the keypairs are found or issued.
		once := sync.OnceValues(func() (nodeConfigMade, error) {
			role, err := roleObjs[ig.Spec.Role]()
			if err != nil {
				return nodeConfigMade{}, err
			}
			nc, err := model.NewGroupNodeConfig(ig, []byte(role.obj.Reveal()))
			if err != nil {
				return nodeConfigMade{}, err
			}
			obj, err := nc.Encode()
			if err != nil {
				return nodeConfigMade{}, err
			}
			return shownObject(obj)
		})
		common.nodeConfig[ig.Metadata.Name] = madeBy(once)
		common.nodeConfigs[ig.Metadata.Name] = engine.Add(g, &storetasks.SecretFile[C]{
			Path:   model.NodeConfigPath(name, ig.Metadata.Name),
			Make:   common.nodeConfig[ig.Metadata.Name],
			Redact: model.RedactNodeConfigObject,
			After:  []engine.Task{roleTasks[ig.Spec.Role]},
		})
	}
	return common, nil
}

// NodeConfig returns the task that writes instance group ig's node configuration, and sum, which returns the
// sha256 its machines pin that configuration by (model.NodeConfigObjectSHA256 of the object the task writes, made
// once per graph when the keystore's keypairs are found or issued): what a machine's user data or startup script
// holds. The task that makes the machines' template comes after the task.
func (t *CommonTasks[C]) NodeConfig(ig string) (task *storetasks.SecretFile[C], sum func() (string, error)) {
	made := t.nodeConfig[ig]
	return t.nodeConfigs[ig], func() (string, error) {
		obj, _, err := made()
		if err != nil {
			return "", err
		}
		return model.NodeConfigObjectSHA256(model.NodeConfigPath(t.cluster, ig), []byte(obj.Reveal()))
	}
}

// groupRoles are the roles of igs, sorted, each once.
func groupRoles(igs []*model.InstanceGroup) []string {
	var roles []string
	for _, ig := range igs {
		roles = append(roles, ig.Spec.Role)
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// StaleNodeConfigs is what the instance groups removed from the spec of a complete cluster leave in the state
// store: their node configurations, and the configuration of a role no group has any more (NodeRoleConfig). It
// is no task of the cloud graph: an update deletes them once the graph is applied (the kept ones written), and
// its dry run lists each one it will delete.
func StaleNodeConfigs[C storetasks.World](c *model.Cluster, igs []*model.InstanceGroup) *storetasks.StaleObjects[C] {
	s := &storetasks.StaleObjects[C]{Prefix: path.Dir(model.NodeConfigPath(c.Metadata.Name, "x"))}
	for _, ig := range igs {
		s.Keep = append(s.Keep, ig.Metadata.Name)
	}
	for _, role := range groupRoles(igs) {
		s.Keep = append(s.Keep, model.RoleConfigName(role))
	}
	s.Note = func(name string) string {
		if role, ok := strings.CutSuffix(name, ".role"); ok {
			return "no instance group of role " + role + " is left in the spec"
		}
		return ""
	}
	return s
}

type nodeConfigMade struct {
	obj   engine.Secret
	shown string
}

// madeBy is a SecretFile's Make of a stored configuration made once.
func madeBy(once func() (nodeConfigMade, error)) func() (engine.Secret, string, error) {
	return func() (engine.Secret, string, error) {
		m, err := once()
		return m.obj, m.shown, err
	}
}

// shownObject is a stored configuration (a node's or a role's) and how a plan shows it.
func shownObject(obj []byte) (nodeConfigMade, error) {
	shown, err := model.RedactNodeConfigObject(string(obj))
	if err != nil {
		return nodeConfigMade{}, err
	}
	return nodeConfigMade{engine.NewSecret(string(obj)), shown}, nil
}

// PortRangesWithout are the tcp port ranges [from, to] that cover 1-65535 but the ports left out: the nodes reach
// the control plane on every port but etcd's.
func PortRangesWithout(out []int32) [][2]int32 {
	out = slices.Clone(out)
	slices.Sort(out)
	out = slices.Compact(out)
	var ranges [][2]int32
	from := int32(1)
	for _, p := range out {
		if p > from {
			ranges = append(ranges, [2]int32{from, p - 1})
		}
		if p+1 > from {
			from = p + 1
		}
	}
	if from <= 65535 {
		ranges = append(ranges, [2]int32{from, 65535})
	}
	return ranges
}

func ptr[T any](v T) *T { return &v }
