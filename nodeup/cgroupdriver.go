package nodeup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"kubeup.dev/kubeup/model"
)

// liveRoot matches the roots that are a running system's: / and a process's root (/proc/PID/root, a container's).
// Any other is a tree nodeup prepares, whose PID 1 is not running yet.
var liveRoot = regexp.MustCompile(`^/(proc/[0-9]+/root)?$`)

// checkCgroupDriver refuses, before anything is changed, a configuration whose kubelet and containerd would use
// the systemd cgroup driver on a running system whose PID 1 is not systemd (sd_booted(3): no /run/systemd/system
// in its root): there is no systemd to create the pods' cgroups, and every pod would fail. The spec says the
// driver (spec.kubelet.cgroupDriver); nodeup can only check it on a running system, not on a tree.
func checkCgroupDriver(source string, nc *model.NodeConfig, root string) error {
	if nc.Cluster == nil || nc.Cluster.Spec.Kubelet == nil || !liveRoot.MatchString(root) {
		return nil
	}
	_, err := os.Stat(filepath.Join(root, "run/systemd/system"))
	if msg := cgroupDriverProblem(nc.Cluster.Spec.Kubelet.CgroupDriver, err == nil); msg != "" {
		return &ConfigError{Err: fmt.Errorf("%s: spec.kubelet.cgroupDriver: %s", source, msg)}
	}
	return nil
}

// cgroupDriverProblem is what is wrong with the cgroup driver on a running system, given whether its PID 1 is
// systemd.
func cgroupDriverProblem(driver string, systemdBooted bool) string {
	if driver == "systemd" && !systemdBooted {
		return "\"systemd\", but PID 1 of this machine is not systemd (no /run/systemd/system): kubelet and containerd " +
			"could not create a pod's cgroup; set cgroupfs for machines without systemd (kubeup edit cluster) and run kubeup update cluster again"
	}
	return ""
}
