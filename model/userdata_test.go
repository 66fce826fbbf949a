package model_test

import (
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/golden"
	"kubeup.dev/kubeup/model"
)

// TestUserDataGolden: the user data of an aws machine (model.UserData), its size under EC2's limit, and its
// refusals.
func TestUserDataGolden(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudAWS, 3)
	ud, err := model.UserData(c, model.FindInstanceGroup(igs, "control-plane-b"), strings.Repeat("c0", 32))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/userdata-control-plane-b.golden", []byte(ud))
	if len(ud) > 16<<10 {
		t.Errorf("user data is %d bytes: EC2 takes 16 KiB", len(ud))
	}

	if _, err := model.UserData(c, igs[0], "not a sha256"); err == nil {
		t.Error("UserData took a configuration sha256 that is not one")
	}
	c.Spec.ConfigBase = "s3://kubeup-state/other.example.com"
	if _, err := model.UserData(c, igs[0], strings.Repeat("c0", 32)); err == nil || !strings.Contains(err.Error(), "is not <state store>/demo.example.com") {
		t.Errorf("UserData with a configBase of another name: %v", err)
	}
}

func TestNodeConfigURL(t *testing.T) {
	c, _ := model.CompleteSpec(t, model.CloudAWS, 1)
	for base, want := range map[string]string{
		"s3://kubeup-state/demo.example.com":           "s3://kubeup-state/demo.example.com/nodeup/nodes",
		"s3://kubeup-state/clusters/demo.example.com/": "s3://kubeup-state/clusters/demo.example.com/nodeup/nodes",
		"s3://kubeup-state/demo.example.com.old":       "",
	} {
		c.Spec.ConfigBase = base
		got, err := model.NodeConfigURL(c, "nodes")
		if got != want || (err == nil) != (want != "") {
			t.Errorf("NodeConfigURL with configBase %s = %q, %v; want %q", base, got, err, want)
		}
	}
}
