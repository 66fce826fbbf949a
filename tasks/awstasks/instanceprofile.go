package awstasks

import (
	"context"
	"fmt"

	"kubeup.dev/kubeup/engine"
)

// InstanceProfile is an IAM instance profile the user made for the cluster's machines (spec.aws.instanceProfile).
// kubeup checks that it exists and never creates or changes it: the model adds it with the lifecycle
// engine.ExistsAndValidates. Its key is "InstanceProfile/<Name>".
type InstanceProfile struct {
	// Name is the profile's name: "kubeup".
	Name string
	// ARN is the profile's ARN (output).
	ARN *string `kubeup:"output"`
}

var (
	_ engine.Resource[*InstanceProfile, *Cloud] = (*InstanceProfile)(nil)
	_ engine.Renderer[*InstanceProfile, *Cloud] = (*InstanceProfile)(nil)
	_ engine.Classed                            = (*InstanceProfile)(nil)
)

func (p *InstanceProfile) Key() engine.Key     { return engine.Key{Type: "InstanceProfile", Name: p.Name} }
func (p *InstanceProfile) Deps() []engine.Task { return nil }
func (p *InstanceProfile) APIClass() string    { return "iam" }

// Find reads the profile (one GetInstanceProfile per profile and run); nil when there is none.
func (p *InstanceProfile) Find(ctx context.Context, c *Cloud) (*InstanceProfile, error) {
	found, err := c.instanceProfile(ctx, p.Name)
	if err != nil || found == nil {
		return nil, err
	}
	return &InstanceProfile{Name: p.Name, ARN: found.Arn}, nil
}

// CheckChanges has nothing to refuse: nothing of a profile is changed.
func (p *InstanceProfile) CheckChanges(actual, expected, changes *InstanceProfile) error { return nil }

// Render never changes the world: the profile is the user's. It is only reached when the task is not added with
// the lifecycle ExistsAndValidates, and the profile does not exist.
func (p *InstanceProfile) Render(ctx context.Context, c *Cloud, actual, expected, changes *InstanceProfile) error {
	return engine.Terminal(fmt.Errorf("IAM instance profile %s does not exist: kubeup never creates one; create it with a role "+
		"that has the node policy of docs/aws.md, and name it in spec.aws.instanceProfile", expected.Name))
}
