package model

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecodeSpec feeds any bytes to what `kubeup replace -f` does with a spec file: Decode, then, for a file
// with a cluster, Complete and Validate. Properties:
//   - nothing panics;
//   - an error is an *InvalidError whose every problem says what is wrong, or an error naming the file;
//   - what Decode reads, Encode writes in a form Decode reads back to the same objects, and writing that
//     again gives the same bytes (`get -o yaml` then `replace -f` changes nothing);
//   - Complete is idempotent;
//   - every Validate problem names a field path;
//   - a spec that validates still validates after Encode and Decode of its complete form, and each of its
//     instance groups' node configurations is one a node accepts (DecodeNodeConfigObject).
//
// The seeds are the specs `kubeup create cluster` writes for each cloud, user and complete, the documents of the
// decode tests, and testdata/fuzz/FuzzDecodeSpec (inputs the fuzzer found).
func FuzzDecodeSpec(f *testing.F) {
	for _, cloud := range []string{CloudLocal, CloudAWS, CloudGCE} {
		for _, spec := range []func(testing.TB, string, int) (*Cluster, []*InstanceGroup){userSpec, completeSpec} {
			c, igs := spec(f, cloud, 3)
			f.Add(encodeObjects(f, c, igs))
			f.Add(encodeObjects(f, nil, igs[:1]))
		}
	}
	for _, s := range []string{
		"",
		"---\n",
		clusterDoc,
		nodesDoc,
		clusterDoc + "--- # the nodes\n" + nodesDoc,
		clusterDoc + "---\n" + clusterDoc,
		"apiVersion: kubeup.dev/v1alpha1\nkind: Cluster\nmetadata: {name: x}\nspec: {zones: 3, frobnicate: true}\n",
		"kind: InstanceGroup\nspec:\n  minSize: 1.5\n  maxSize: 99999999999\n",
		"a: &a [1]\nb: *a\n",
		"[1, 2]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode("fuzz.yaml", data)
		if err != nil {
			checkSpecError(t, err, "fuzz.yaml", false)
			return
		}
		if objs.Cluster == nil && len(objs.InstanceGroups) == 0 {
			t.Fatal("Decode returned no object and no error")
		}
		written := encodeObjects(t, objs.Cluster, objs.InstanceGroups)
		again, err := Decode("written.yaml", written)
		if err != nil {
			t.Fatalf("the spec as written does not decode: %v\nread:\n%q\nwritten:\n%s", err, data, written)
		}
		if diff := cmp.Diff(objs, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the spec as written decodes to other objects (-read +written):\n%s\nwritten:\n%s", diff, written)
		}
		if twice := encodeObjects(t, again.Cluster, again.InstanceGroups); !bytes.Equal(written, twice) {
			t.Fatalf("writing the spec again gives other bytes:\nfirst:\n%s\nsecond:\n%s", written, twice)
		}
		if objs.Cluster == nil {
			return // `replace -f` wants a cluster; an instance group alone is only decoded
		}
		c, igs := Complete(objs.Cluster, objs.InstanceGroups)
		c2, igs2 := Complete(c, igs)
		if diff := cmp.Diff(&Objects{Cluster: c, InstanceGroups: igs}, &Objects{Cluster: c2, InstanceGroups: igs2}); diff != "" {
			t.Fatalf("Complete is not idempotent (-once +twice):\n%s", diff)
		}
		_ = Warnings(c)
		if err := Validate("fuzz.yaml", c, igs); err != nil {
			checkSpecError(t, err, "fuzz.yaml", true)
			var invalid *InvalidError
			if !errors.As(err, &invalid) {
				t.Fatalf("Validate returned %T, want *InvalidError: %v", err, err)
			}
			return
		}
		// A valid spec: its complete form, written and read back, is still valid, and every node accepts its
		// configuration.
		full, err := Decode("full.yaml", encodeObjects(t, c, igs))
		if err != nil {
			t.Fatalf("the complete spec as written does not decode: %v", err)
		}
		if err := Validate("full.yaml", full.Cluster, full.InstanceGroups); err != nil {
			t.Fatalf("the complete spec as written and read back is not valid: %v", err)
		}
		for _, ig := range igs {
			obj, err := NewNodeConfig(c, ig).Encode()
			if err != nil {
				t.Fatalf("instance group %s: encoding its node configuration: %v", ig.Metadata.Name, err)
			}
			if _, err := DecodeNodeConfigObject("conf", obj, nil); err != nil {
				t.Fatalf("instance group %s: a node refuses the configuration of a valid spec: %v", ig.Metadata.Name, err)
			}
		}
	})
}

// checkSpecError fails unless err is an *InvalidError of source whose every problem has a message and, with
// needPath, a field path; or another error that names source first. (Decode's problem with a document that is
// not a mapping concerns the whole document: its path is empty when the file holds only that one.)
func checkSpecError(t *testing.T, err error, source string, needPath bool) {
	t.Helper()
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		if !strings.HasPrefix(err.Error(), source+": ") {
			t.Fatalf("error %q does not name %s", err, source)
		}
		return
	}
	if invalid.Source != source {
		t.Fatalf("*InvalidError of %q, want %q", invalid.Source, source)
	}
	if len(invalid.Problems) == 0 {
		t.Fatalf("*InvalidError without problems: %v", err)
	}
	for _, p := range invalid.Problems {
		if needPath && strings.TrimSpace(p.Path) == "" || strings.TrimSpace(p.Message) == "" {
			t.Fatalf("a problem without a field path or a message: %#v in\n%v", p, err)
		}
	}
}

// encodeObjects is Encode of the cluster (when there is one) then the instance groups.
func encodeObjects(t testing.TB, c *Cluster, igs []*InstanceGroup) []byte {
	t.Helper()
	var objs []any
	if c != nil {
		objs = append(objs, c)
	}
	for _, ig := range igs {
		objs = append(objs, ig)
	}
	data, err := Encode(objs...)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return data
}
