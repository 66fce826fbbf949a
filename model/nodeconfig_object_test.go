package model_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/model"
	"maps"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// TestNodeConfigIsOneObject: the cloud graph writes each group's node configuration, and each role's, as ONE object
// that carries its own sha256 on its first line (no .sha256 object beside it that a killed update could leave out
// of step), checkable by hand with `tail -n +2 FILE | sha256sum`.
func TestNodeConfigIsOneObject(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	g, err := cloudgraph.BuildLocalCloudGraph(c, igs, cloudgraph.LocalCloudState{})
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]string{}
	for _, task := range g.Tasks() {
		if f, ok := task.(*storetasks.File[*localtasks.Cloud]); ok && strings.Contains(f.Path, "/nodeup/") {
			t.Errorf("the cloud graph writes %s as a plain file: a node configuration carries keys", f.Path)
			continue
		}
		f, ok := task.(*storetasks.SecretFile[*localtasks.Cloud])
		if !ok || !strings.Contains(f.Path, "/nodeup/") {
			continue
		}
		if strings.HasSuffix(f.Path, ".sha256") {
			t.Errorf("the cloud graph writes %s: a second object that can disagree with the configuration", f.Path)
			continue
		}
		// As a dry run makes it before any keypair is issued: every certificate and key is PendingPEM.
		if err := f.Resolve(); err != nil {
			t.Fatal(err)
		}
		objects[f.Path] = f.Contents.Reveal()
	}
	var paths []string
	for _, ig := range igs {
		paths = append(paths, model.NodeConfigPath(c.Metadata.Name, ig.Metadata.Name))
	}
	paths = append(paths, model.RoleConfigPath(c.Metadata.Name, model.RoleControlPlane), model.RoleConfigPath(c.Metadata.Name, model.RoleNode))
	for _, p := range paths {
		obj, ok := objects[p]
		if !ok {
			t.Errorf("no store object %s", p)
			continue
		}
		// What `tail -n +2 FILE | sha256sum` checks, without the model's decoder.
		first, rest, _ := strings.Cut(obj, "\n")
		sum := sha256.Sum256([]byte(rest))
		if want := "# sha256:" + hex.EncodeToString(sum[:]); first != want {
			t.Errorf("%s: first line %q, want %q (the sha256 of the rest)", p, first, want)
		}
		switch p {
		case model.NodeConfigPath(c.Metadata.Name, "nodes"):
			golden.Assert(t, "testdata/nodeconfig-object-nodes.golden", []byte(obj))
		case model.RoleConfigPath(c.Metadata.Name, model.RoleNode):
			golden.Assert(t, "testdata/nodeconfig-object-node-role.golden", []byte(obj))
		}
	}
	if len(objects) != len(paths) {
		t.Errorf("the cloud graph writes %d objects under nodeup/, want %d: %v", len(objects), len(paths), slices.Sorted(maps.Keys(objects)))
	}
}

// TestNodeConfigObjectRoundTrip: what Encode writes, DecodeNodeConfigObject reads back to the same
// configuration, byte-stable.
func TestNodeConfigObjectRoundTrip(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 3)
	nc := model.NewNodeConfig(c, model.FindInstanceGroup(igs, "control-plane-b"))
	obj, err := nc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := nc.Encode(); !bytes.Equal(obj, again) {
		t.Error("Encode is not byte-stable")
	}
	got, err := model.DecodeNodeConfigObject("conf", obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := got.Encode()
	if err != nil || !bytes.Equal(back, obj) {
		t.Errorf("decode then encode changed the object (%v)", err)
	}
}

// TestDecodeNodeConfigObjectDamaged: an object whose content does not match its first line is a
// *NodeConfigSumError (a copy still being written, or a damaged one: the caller decides how long to wait); an
// object without the first line is refused as not written by this kubeup.
func TestDecodeNodeConfigObjectDamaged(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	obj, err := model.NewNodeConfig(c, model.FindInstanceGroup(igs, "nodes")).Encode()
	if err != nil {
		t.Fatal(err)
	}
	body, sum, _ := model.NewNodeConfig(c, model.FindInstanceGroup(igs, "nodes")).Marshal()
	header := string(obj[:bytes.IndexByte(obj, '\n')+1])
	changed := bytes.Clone(obj)
	changed[len(changed)/2] ^= 0x01

	for _, tt := range []struct {
		name     string
		obj      []byte
		wantSum  bool   // a *NodeConfigSumError
		wantWant string // its Want
		want     []string
	}{
		{name: "empty", obj: nil, wantSum: true, want: []string{"conf: incomplete: no complete first line"}},
		{name: "half a first line", obj: obj[:20], wantSum: true, want: []string{"no complete first line"}},
		{name: "first line only", obj: []byte(header), wantSum: true, wantWant: sum, want: []string{"conf: content does not match its sha256", sum}},
		{name: "truncated", obj: obj[:len(obj)-10], wantSum: true, wantWant: sum, want: []string{"content does not match its sha256", "tail -n +2"}},
		{name: "one byte changed", obj: changed, wantSum: true, wantWant: sum, want: []string{"content does not match its sha256"}},
		{name: "a second copy appended", obj: append(bytes.Clone(obj), obj...), wantSum: true, wantWant: sum},
		{name: "no first line: an older kubeup's", obj: body, want: []string{"conf: the first line is not", "kubeup update cluster --yes"}},
		{name: "upper-case hex", obj: []byte(strings.ToUpper(header) + string(body)), want: []string{"the first line is not"}},
		{name: "not a node configuration", obj: []byte("hello\n"), want: []string{"the first line is not"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.DecodeNodeConfigObject("conf", tt.obj, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			var se *model.NodeConfigSumError
			if errors.As(err, &se) != tt.wantSum {
				t.Fatalf("error %v: *NodeConfigSumError %v, want %v", err, !tt.wantSum, tt.wantSum)
			}
			if se != nil && se.Want != tt.wantWant {
				t.Errorf("Want = %q, want %q", se.Want, tt.wantWant)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
