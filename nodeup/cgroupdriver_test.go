package nodeup

import (
	"os"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

func TestCgroupDriverProblem(t *testing.T) {
	for _, tt := range []struct {
		driver  string
		booted  bool
		refused bool
	}{
		{"systemd", true, false},
		{"systemd", false, true},
		{"cgroupfs", false, false},
		{"cgroupfs", true, false},
	} {
		if got := cgroupDriverProblem(tt.driver, tt.booted); (got != "") != tt.refused {
			t.Errorf("cgroupDriverProblem(%q, systemd booted %t) = %q, want refused %t", tt.driver, tt.booted, got, tt.refused)
		}
	}
}

// A tree nodeup prepares has no running PID 1: nothing is checked there, whatever it holds.
func TestCheckCgroupDriverOnlyOnLiveRoots(t *testing.T) {
	nc := &model.NodeConfig{Cluster: &model.Cluster{Spec: model.ClusterSpec{Kubelet: &model.KubeletConfig{CgroupDriver: "systemd"}}}}
	if err := checkCgroupDriver("node.conf", nc, t.TempDir()); err != nil {
		t.Errorf("a tree: %v", err)
	}
	for root, live := range map[string]bool{"/": true, "/proc/1/root": true, "/proc/self/root": false, "/srv/image": false, "/proc/1/root/x": false} {
		if got := liveRoot.MatchString(root); got != live {
			t.Errorf("liveRoot(%q) = %t, want %t", root, got, live)
		}
	}
	err := checkCgroupDriver("node.conf", nc, "/")
	_, statErr := os.Stat("/run/systemd/system")
	if booted := statErr == nil; booted != (err == nil) {
		t.Errorf("this machine (systemd booted %t): %v", booted, err)
	}
	if err != nil && !strings.Contains(err.Error(), "node.conf: spec.kubelet.cgroupDriver: \"systemd\", but PID 1") {
		t.Errorf("the error does not name the file and the field: %v", err)
	}
}
