package model

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// The paths kubeup owns. Every path a spec may set names a file or directory in a directory kubeup owns, so that
// no spec, however it was written, makes nodeup or protokube (root on every node) write over a file of the
// system: /etc/shadow, an ssh key, a systemd unit of another service. docs/cluster-spec.md lists them.

// SpecNodeDirs are the directories of a node that the spec's node paths may name a file or directory in (below
// them, never one of them itself): the components' certificates, keys, kubeconfigs and static-pod manifests, and
// the local provider's hosts file and TSIG secret.
var SpecNodeDirs = []string{
	"/etc/kubernetes",
	"/etc/kubeup",
	"/srv/kubernetes",
	"/var/lib/kubelet",
	"/var/lib/kube-proxy",
	"/var/lib/kube-controller-manager",
	"/var/lib/kube-scheduler",
	"/run/kubeup",
}

// KubeupStateDir holds kubeup's own state on a node (the inputs services were started with, nodeup's record of
// what it installed, format intents): no spec path may name anything in it.
const KubeupStateDir = "/var/lib/kubeup"

// NodeupFiles are the files nodeup writes outside SpecNodeDirs and KubeupStateDir, whatever the spec says:
// kubelet's flags, the container runtime's configuration, the units of the services it installs, and the
// binaries of spec.assets (kubelet, containerd, containerd-shim-runc-v2, ctr, crictl and protokube in
// /usr/local/bin, runc in /usr/local/sbin, the CNI plugins in /opt/cni/bin). OwnedNodePath adds them.
var NodeupFiles = append([]string{
	KubeletEnvFile,
	path.Join(systemdUnitDir, "kubelet.service"),
	path.Join(systemdUnitDir, "protokube.service"),
	ContainerdConfigFile,
	CNIConfigTemplate,
	CrictlConfig,
	path.Join(systemdUnitDir, ContainerdUnit),
}, assetFiles...)

// NodeupUnits are the systemd units nodeup installs from a node configuration.
var NodeupUnits = []string{"kubelet.service", "protokube.service", ContainerdUnit}

// reservedNodePaths are files in SpecNodeDirs that kubeup itself writes, which no spec path may name: the node's
// configuration and its role's beside it.
var reservedNodePaths = []string{
	NodeConfFile,
	path.Join(path.Dir(NodeConfFile), RoleConfigName(RoleControlPlane)),
	path.Join(path.Dir(NodeConfFile), RoleConfigName(RoleNode)),
}

// under reports whether p is strictly below dir.
func under(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }

// OwnedNodePath reports whether nodeup may write or remove the node path p (absolute and clean): a path below
// SpecNodeDirs or kubeup's state directory /var/lib/kubeup, or one of NodeupFiles. nodeup refuses a graph that
// names any other, whatever its configuration says.
func OwnedNodePath(p string) bool {
	return slices.Contains(NodeupFiles, p) || under(p, KubeupStateDir) ||
		slices.ContainsFunc(SpecNodeDirs, func(d string) bool { return under(p, d) })
}

// nodePathProblem checks a node path the spec sets, once pathProblem found it well formed: below one of
// SpecNodeDirs, and none of the files kubeup writes there itself.
func nodePathProblem(p string) string {
	switch {
	case slices.Contains(reservedNodePaths, p):
		return fmt.Sprintf("%q is a file kubeup writes itself: give a path of its own in %s", p, dirList(SpecNodeDirs))
	case !slices.ContainsFunc(SpecNodeDirs, func(d string) bool { return under(p, d) }):
		return fmt.Sprintf("%q is not in a directory kubeup owns on a node: give a path in %s (nodeup writes nothing else)", p, dirList(SpecNodeDirs))
	}
	return ""
}

// validateNodePath is validatePath for a path on a node: well formed, and in a directory kubeup owns there.
func validateNodePath(ps *problems, field, p string, required bool) {
	validatePath(ps, field, p, required)
	if p != "" && pathProblem(p) == "" {
		check(ps, field, nodePathProblem(p))
	}
}

// hostSystemDirs are the directories of the system that no path of the local provider's host (the pool, the
// zone file) may be in, or be, but for hostExceptions below them.
var (
	hostSystemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
		"/run", "/sbin", "/snap", "/sys", "/usr", "/var"}
	hostTopDirs    = []string{"/home", "/media", "/mnt", "/opt", "/srv", "/tmp"}
	hostExceptions = []string{KubeupStateDir, "/var/tmp"}
)

// hostPathProblem checks a path of the local provider's host that the spec sets (spec.local.poolDir,
// spec.local.zoneFile), once pathProblem found it well formed. kubeup keeps them wherever the operator keeps
// kubeup's state (beside a file:// state store by default, which may be anywhere), so they cannot be held to a
// fixed list of directories as a node's paths are. They are held out of the system's instead: not in /etc, /usr,
// /var (but /var/lib/kubeup and /var/tmp), /root, /run and the other directories of the operating system, nor
// one of /home, /tmp, /srv... itself, nor in a hidden directory or file (~/.ssh, ~/.config).
func hostPathProblem(p string) string {
	const fix = "keep it beside the state store (the default) or in /var/lib/kubeup"
	if slices.ContainsFunc(hostExceptions, func(d string) bool { return under(p, d) }) {
		return ""
	}
	for _, d := range hostSystemDirs {
		if p == d || under(p, d) {
			return fmt.Sprintf("%q is in %s, a directory of the system, which kubeup does not write in: %s", p, d, fix)
		}
	}
	if slices.Contains(hostTopDirs, p) {
		return fmt.Sprintf("%q is a directory of the system, which kubeup does not write in: give a directory of its own, or %s", p, fix)
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if strings.HasPrefix(elem, ".") {
			return fmt.Sprintf("%q is hidden (%s): hidden files and directories are other programs' configuration: %s", p, elem, fix)
		}
	}
	return ""
}

// dirList is dirs for a message: "/a/, /b/ or /c/".
func dirList(dirs []string) string {
	s := make([]string, len(dirs))
	for i, d := range dirs {
		s[i] = d + "/"
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
