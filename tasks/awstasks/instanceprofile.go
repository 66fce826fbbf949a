package awstasks

import (
	"context"
	"fmt"

	"kubeup.dev/kubeup/engine"
)

// InstanceProfile is an IAM instance profile the user made for the cluster's machines (spec.aws.instanceProfile).
// kubeup checks that it exists and never creates or changes it: the model adds it with the lifecycle
// engine.ExistsAndValidates. Find never returns nil: a profile that is not there is its terminal error (wrapping
// engine.ErrNotFound), which names the spec's field (SpecPath) and the fix. Its key is "InstanceProfile/<Name>".
type InstanceProfile struct {
	// Name is the profile's name: "kubeup".
	Name string
	// SpecPath is the field (or fields) of the spec that name the profile ("spec.aws.instanceProfile"), for its
	// errors; "": none.
	SpecPath string `kubeup:"-"`
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

// Find reads the profile (one GetInstanceProfile per profile and run); a profile that is not there is an error
// (see InstanceProfile).
func (p *InstanceProfile) Find(ctx context.Context, c *Cloud) (*InstanceProfile, error) {
	found, err := c.instanceProfile(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, p.missing()
	}
	return &InstanceProfile{Name: p.Name, ARN: found.Arn}, nil
}

// CheckChanges has nothing to refuse: nothing of a profile is changed.
func (p *InstanceProfile) CheckChanges(actual, expected, changes *InstanceProfile) error { return nil }

// missing is the error of a profile that is not there. IAM is global: no region to name.
func (p *InstanceProfile) missing() error {
	return engine.Terminal(fmt.Errorf("%s: kubeup never creates one; create it with a role that has the node policy of "+
		"docs/aws.md, or name an existing one: %w",
		specSays(p.SpecPath, fmt.Sprintf("IAM instance profile %s does not exist in this AWS account (IAM's profiles are global, of no region)", p.Name)),
		engine.ErrNotFound))
}

// Render never changes the world: the profile is the user's (Find fails when it is not there).
func (p *InstanceProfile) Render(ctx context.Context, c *Cloud, actual, expected, changes *InstanceProfile) error {
	return expected.missing()
}
