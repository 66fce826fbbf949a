package cloudup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// Versions and conflicts.
//
// A cluster's spec is one object of the store, so its generation changes with every change of any part of it.
// What a command compares is the version of the parts it writes: each object of the spec (the Cluster, each
// InstanceGroup) has a version of its own, the hash of its stored form (objectVersion), which `kubeup get` and
// `kubeup edit` show as metadata.resourceVersion. A command that writes an object read at a version that is no
// longer the stored one, and that differs from the stored one, would undo a change someone else made since: it
// is refused (*ConflictError). A change of another object of the spec does not concern it.
//
// The write itself stays conditional on the whole spec's generation (statestore.Store.WriteIf), so that two
// commands never both write over the same read. When the write fails because someone else wrote the spec since
// it was read, the command reads the spec again, decides again (refusing now, if what it writes conflicts with
// what was written) and writes again: retryRaced, at most maxWrites times, after a short random wait.

// objectVersion is the version of an object in its stored form: the first 16 hex digits of the sha256 of its
// encoding.
func objectVersion(encoded []byte) string {
	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:8])
}

// objectKey names an object of a spec: "Cluster", or "InstanceGroup/<name>".
func objectKey(obj any) string {
	switch o := obj.(type) {
	case *model.Cluster:
		return model.KindCluster
	case *model.InstanceGroup:
		return model.KindInstanceGroup + "/" + o.Metadata.Name
	}
	panic(fmt.Sprintf("objectKey of %T", obj))
}

// encodeObjects returns the encoding of each of objs (in their stored form), by objectKey.
func encodeObjects(objs []any) (map[string][]byte, error) {
	out := make(map[string][]byte, len(objs))
	for _, o := range objs {
		data, err := model.Encode(o)
		if err != nil {
			return nil, err
		}
		out[objectKey(o)] = data
	}
	return out, nil
}

// ClusterVersion is the version of s.Cluster: what `kubeup get cluster` prints as its metadata.resourceVersion.
func (s *Stored) ClusterVersion() string { return objectVersion(s.encoded[model.KindCluster]) }

// GroupVersion is the version of the instance group of s named name (as ClusterVersion), or "" when s has none.
func (s *Stored) GroupVersion(name string) string {
	data, ok := s.encoded[model.KindInstanceGroup+"/"+name]
	if !ok {
		return ""
	}
	return objectVersion(data)
}

// changedObjects describes the objects of now that are not as they are in before: "the Cluster changed",
// "instance group nodes changed", "... added", "... removed", in the order of the spec.
func changedObjects(before, now *Stored) []string {
	var out []string
	if !bytes.Equal(before.encoded[model.KindCluster], now.encoded[model.KindCluster]) {
		out = append(out, "the Cluster changed")
	}
	for _, ig := range now.InstanceGroups {
		switch was, ok := before.encoded[objectKey(ig)]; {
		case !ok:
			out = append(out, "instance group "+ig.Metadata.Name+" added")
		case !bytes.Equal(was, now.encoded[objectKey(ig)]):
			out = append(out, "instance group "+ig.Metadata.Name+" changed")
		}
	}
	for _, ig := range before.InstanceGroups {
		if _, ok := now.encoded[objectKey(ig)]; !ok {
			out = append(out, "instance group "+ig.Metadata.Name+" removed")
		}
	}
	if len(out) == 0 {
		out = append(out, "written anew") // the same objects, written by another kubeup
	}
	return out
}

// ConflictError refuses a change of a cluster's spec: objects it would write were changed by someone else since
// they were read, and writing them would undo that change. Nothing was written. It matches
// statestore.ErrConflict.
type ConflictError struct {
	Cluster string
	Source  string // what holds the change: a file, or a command
	Objects []ObjectConflict
}

// ObjectConflict is one object of a ConflictError.
type ObjectConflict struct {
	// Group is the instance group's name, or "" for the Cluster.
	Group string
	// ReadAt is the version the object was read at (its metadata.resourceVersion); Now is the stored version,
	// or "" when the object was deleted since.
	ReadAt, Now string
	// Paths are the field paths at which the stored object and the written one differ (the other change and
	// the writer's, which cannot be told apart); empty when the object was deleted since.
	Paths []string
	// Unchanged says the written object is as it was read: the writer did not change it.
	Unchanged bool
}

// maxPaths is how many field paths a conflict names per object.
const maxPaths = 8

func (e *ConflictError) Error() string {
	var b strings.Builder
	var gets []string
	for i, o := range e.Objects {
		what, get := "cluster "+e.Cluster, fmt.Sprintf("`kubeup get cluster %s -o yaml`", e.Cluster)
		if o.Group != "" {
			what, get = fmt.Sprintf("instance group %s of cluster %s", o.Group, e.Cluster), fmt.Sprintf("`kubeup get ig %s --name %s -o yaml`", o.Group, e.Cluster)
		}
		gets = append(gets, get)
		if i > 0 {
			b.WriteString("; ")
		}
		if o.Now == "" {
			fmt.Fprintf(&b, "%s was deleted by someone else since %s was read (%v: its metadata.resourceVersion is %s)", what, e.Source, statestore.ErrConflict, o.ReadAt)
			continue
		}
		fmt.Fprintf(&b, "%s was changed by someone else since %s was read (%v: its metadata.resourceVersion is %s, the store's is now %s", what, e.Source, statestore.ErrConflict, o.ReadAt, o.Now)
		if len(o.Paths) > 0 {
			paths := o.Paths
			if len(paths) > maxPaths {
				paths = append(paths[:maxPaths:maxPaths], fmt.Sprintf("and %d more", len(o.Paths)-maxPaths))
			}
			fmt.Fprintf(&b, "; the stored one and yours differ at %s", strings.Join(paths, ", "))
		}
		if o.Unchanged {
			fmt.Fprintf(&b, "; %s holds it as it was read, with no change of yours: leave it out to keep the other change", e.Source)
		}
		b.WriteString(")")
	}
	it := "it"
	if len(e.Objects) > 1 {
		it = "them"
	}
	fmt.Fprintf(&b, ": nothing was written. To keep both changes, read %s again (%s), re-apply your change to %s and replace with that; "+
		"to overwrite the other change knowingly, replace with --force", it, strings.Join(gets, ", "), it)
	return b.String()
}

func (e *ConflictError) Unwrap() error { return statestore.ErrConflict }

// conflicts refuses objs (what source holds, each with the metadata.resourceVersion it was read at) when writing
// them over s (the cluster as stored now) would undo someone else's change: an object that is no longer at the
// version it was read at, nor stored as objs hold it already. An object without a resourceVersion (written by
// hand) conflicts with nothing; neither does one that carries the generation of the whole spec, as an older
// kubeup printed it, when the spec is still at that generation.
func (cs *Clusters) conflicts(source string, s *Stored, objs *model.Objects) error {
	var found []ObjectConflict
	for _, o := range objects(objs.Cluster, objs.InstanceGroups) {
		var rv, group string
		switch o := o.(type) {
		case *model.Cluster:
			rv = o.Metadata.ResourceVersion
		case *model.InstanceGroup:
			rv, group = o.Metadata.ResourceVersion, o.Metadata.Name
		}
		if rv == "" || rv == string(s.Generation) {
			continue
		}
		stored, ok := s.encoded[objectKey(o)]
		if ok && objectVersion(stored) == rv {
			continue
		}
		mine, err := cs.storedForm(o)
		if err != nil {
			return err
		}
		if bytes.Equal(stored, mine) {
			continue // the store holds it as objs do already
		}
		c := ObjectConflict{Group: group, ReadAt: rv, Unchanged: objectVersion(mine) == rv}
		if ok {
			c.Now = objectVersion(stored)
			changes, _ := engine.DiffStructured(string(stored), string(mine))
			for _, pc := range changes {
				c.Paths = append(c.Paths, pc.Path)
			}
		}
		found = append(found, c)
	}
	if len(found) == 0 {
		return nil
	}
	return &ConflictError{Cluster: s.Cluster.Metadata.Name, Source: source, Objects: found}
}

// storedForm is the encoding of o (a *model.Cluster or *model.InstanceGroup) as the store would hold it.
func (cs *Clusters) storedForm(o any) ([]byte, error) {
	switch o := o.(type) {
	case *model.Cluster:
		c, _ := cs.normalize(o, nil)
		return model.Encode(c)
	case *model.InstanceGroup:
		_, igs := withoutResourceVersion(&model.Cluster{}, []*model.InstanceGroup{o})
		return model.Encode(igs[0])
	}
	panic(fmt.Sprintf("storedForm of %T", o))
}

// racedError is the error of a conditional write of a cluster's spec that someone else wrote between its read
// and this write: nothing was written, and the change can be decided again on what is stored now.
type racedError struct {
	name string
	err  error // statestore.ErrConflict
}

func (e *racedError) Error() string {
	return fmt.Sprintf("cluster %s was changed by someone else since it was read (%v): nothing was written; read it again (`kubeup get cluster %s -o yaml`) and redo your change",
		e.name, e.err, e.name)
}

func (e *racedError) Unwrap() error { return e.err }

// maxWrites is how often a change of a cluster's spec is tried when others keep writing the spec between its
// read and its write. Each failed try means another change was written; of n commands that change a cluster at
// once, each is written (or refused) within n tries.
const maxWrites = 16

// retryRaced runs change (read the spec, decide, write) until it succeeds, fails for another reason than a
// raced write (*racedError), or has raced maxWrites times. Between tries it waits a short random time, growing
// with each try up to cs.raceWait (default 500ms), so that writers racing each other spread out.
func (cs *Clusters) retryRaced(ctx context.Context, change func() error) error {
	longest := cs.raceWait
	if longest == 0 {
		longest = 500 * time.Millisecond
	}
	for try := 1; ; try++ {
		err := change()
		var raced *racedError
		if !errors.As(err, &raced) {
			return err
		}
		if try == maxWrites {
			return fmt.Errorf("cluster %s was changed by someone else %d times while this change was being written, each time between its read and its write (%w): nothing was written; run the command again",
				raced.name, maxWrites, raced.err)
		}
		wait := min(longest/64<<try, longest)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s: %w (the spec was written by someone else since it was read, and the change was to be tried again: nothing was written)", raced.name, ctx.Err())
		case <-time.After(wait/2 + rand.N(wait/2+1)):
		}
	}
}
