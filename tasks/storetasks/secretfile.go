package storetasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"kubeup.dev/kubeup/engine"
)

// SecretFile is an object in the state store that holds secrets: a node configuration that carries private keys.
// Its contents are compared as a whole but printed as (sensitive); what plans show is Shown, the contents with
// every secret replaced by (sensitive), made by Redact from what is stored, so that a change a reviewer may
// see is shown line by line and a key never is.
//
// Its contents may be made from other tasks' outputs (the certificates a node configuration carries): Make is
// then called once those tasks are done (engine.Resolver).
type SecretFile[C World] struct {
	// Path is the object's path in the store, and the task's name.
	Path string
	// Contents is the object's whole content.
	Contents *engine.Secret
	// Shown is Contents as Redact shows it.
	Shown *string
	// Make, when set, makes Contents and Shown from the outputs of the tasks in After (called by Resolve).
	Make func() (contents engine.Secret, shown string, err error) `kubeup:"-"`
	// Redact shows a stored object without its secrets; an error says the object is not one it can read.
	Redact func(contents string) (string, error) `kubeup:"-"`
	// After lists tasks to run first, such as those whose outputs Make reads.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*SecretFile[World], World] = (*SecretFile[World])(nil)
	_ engine.Renderer[*SecretFile[World], World] = (*SecretFile[World])(nil)
	_ engine.Resolver                            = (*SecretFile[World])(nil)
)

func (f *SecretFile[C]) Key() engine.Key { return engine.Key{Type: "StoreFile", Name: f.Path} }

func (f *SecretFile[C]) Deps() []engine.Task { return f.After }

// Resolve makes Contents and Shown with Make.
func (f *SecretFile[C]) Resolve() error {
	if f.Make == nil {
		return nil
	}
	contents, shown, err := f.Make()
	if err != nil {
		return err
	}
	f.Contents, f.Shown = &contents, &shown
	return nil
}

// Find reads the object back; nil when it does not exist.
func (f *SecretFile[C]) Find(ctx context.Context, world C) (*SecretFile[C], error) {
	b, err := world.StateStore().ReadFile(ctx, f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if f.Redact == nil {
		return nil, engine.Terminal(fmt.Errorf("store file %s: Redact is required", f.Path))
	}
	contents := engine.NewSecret(string(b))
	if f.Contents != nil && f.Shown != nil && f.Contents.Reveal() == string(b) {
		// What is stored is what f holds (made by Resolve): it shows as f does, without a second Redact (a node
		// configuration's takes a YAML decode and encode; update --yes finds 50 groups' so in its check).
		shown := *f.Shown
		return &SecretFile[C]{Path: f.Path, Contents: &contents, Shown: &shown}, nil
	}
	shown, err := f.Redact(string(b))
	if err != nil {
		shown = fmt.Sprintf("(an object kubeup cannot read: %v)", err)
	}
	return &SecretFile[C]{Path: f.Path, Contents: &contents, Shown: &shown}, nil
}

func (f *SecretFile[C]) CheckChanges(actual, expected, changes *SecretFile[C]) error {
	if expected.Contents == nil || expected.Redact == nil {
		return fmt.Errorf("store file %s: Contents and Redact are required", expected.Path)
	}
	return nil
}

// Render writes the whole object, atomically (the store guarantees it).
func (f *SecretFile[C]) Render(ctx context.Context, world C, actual, expected, changes *SecretFile[C]) error {
	if err := world.StateStore().WriteFile(ctx, expected.Path, []byte(expected.Contents.Reveal())); err != nil {
		return fmt.Errorf("writing %s to the state store: %w", expected.Path, err)
	}
	return nil
}
