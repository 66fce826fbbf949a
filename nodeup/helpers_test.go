package nodeup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

const testCluster = "demo.example.com"

// nodeConfig returns the node configuration `kubeup update cluster` writes for group ("control-plane-a" or
// "nodes") of a local cluster in one zone: one object, its sha256 on its first line.
func nodeConfig(t testing.TB, group string) []byte {
	t.Helper()
	return nodeConfigWith(t, group, nil)
}

// nodeConfigWith is nodeConfig with the complete spec changed by mutate first.
func nodeConfigWith(t testing.TB, group string, mutate func(*model.Cluster)) []byte {
	t.Helper()
	c, igs := completeSpec(t, mutate)
	if err := model.Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	for _, ig := range igs {
		if ig.Metadata.Name == group {
			obj, err := model.NewNodeConfig(c, ig).Encode()
			if err != nil {
				t.Fatal(err)
			}
			return obj
		}
	}
	t.Fatalf("no instance group %q", group)
	return nil
}

// seal returns body as a stored node configuration: the first line "# sha256:<hex of body>", then body.
func seal(body []byte) []byte {
	return append([]byte("# sha256:"+sha256Of(body)+"\n"), body...)
}

// unseal returns the YAML after an object's first line.
func unseal(t testing.TB, obj []byte) []byte {
	t.Helper()
	_, body, ok := bytes.Cut(obj, []byte("\n"))
	if !ok {
		t.Fatalf("no first line in %q", obj)
	}
	return body
}

// writeConf writes the object to dir/name and returns its path.
func writeConf(t testing.TB, dir, name string, obj []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, obj, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func sha256Of(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// result is what one Run printed.
type result struct {
	out, err string
	runErr   error
}

// run runs nodeup with o, capturing its output; logs go to the test log.
func run(t testing.TB, o Options) result {
	t.Helper()
	var out, errOut bytes.Buffer
	o.Out, o.Err = &out, &errOut
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	err := Run(context.Background(), o)
	return result{out: out.String(), err: errOut.String(), runErr: err}
}

// testLogger sends logs, at debug level, to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// treeHash describes every file, directory and symlink under root: path, type, mode, contents or target.
func treeHash(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s %v", rel, info.Mode())
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + sha256Of(b)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// smallExecutable writes a stand-in for the nodeup binary, so that tests do not copy the test binary around.
func smallExecutable(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nodeup")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho nodeup\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// completeSpec is the complete spec of the tests' one-zone local cluster, changed by mutate (when not nil).
func completeSpec(t testing.TB, mutate func(*model.Cluster)) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{
		Name: testCluster, CloudProvider: model.CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1, NodeCount: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "file:///var/lib/kubeup/state/" + testCluster
	c, igs = model.Complete(c, igs)
	if mutate != nil {
		mutate(c)
	}
	return c, igs
}
