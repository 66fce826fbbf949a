package model

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// kubeletFlags adds what the instance group implies (its node label; the control plane's taint) to the spec's
// kubelet flags. A value the user set for the same flag wins.
//
// The control plane's node-role.kubernetes.io/control-plane label is not among them: kubelet refuses to start
// with a --node-labels key in the kubernetes.io or k8s.io namespaces outside the few it may set on itself
// (kubeletLabelAllowed), and the NodeRestriction admission plugin would refuse it anyway. That label is set on
// the Node object once it has registered, as kops-controller does; its taint is allowed here.
func KubeletFlags(k *KubeletConfig, ig *InstanceGroup) []string {
	cfg := *k
	labels := map[string]string{instanceGroupLabel: ig.Metadata.Name}
	if ig.Spec.Role == RoleControlPlane {
		if cfg.RegisterWithTaints == nil {
			cfg.RegisterWithTaints = []string{controlPlaneTaint}
		}
	}
	maps.Copy(labels, k.NodeLabels)
	cfg.NodeLabels = labels
	return Flags(&cfg)
}

// kubeletEnv is the environment file kubelet.service reads its flags from: DAEMON_ARGS, as kops' nodeup writes
// it, so that an operator finds kubelet's flags where they look for them.
//
// kubelet.service starts `kubelet $DAEMON_ARGS`, and systemd splits such a variable into arguments at
// whitespace, and (systemd 252, Debian 12) also removes quotes and backslashes in it as a shell would. So every
// flag must be one plain word (plainWord): then it is exactly one argument under any of these rules, and the
// assignment itself is written escaped by systemd's rules (envAssignment). A flag with any other character is
// refused here, whatever validation said, naming the flag: validation refuses every such value with its field
// path first, so this only stops a spec that bypassed it. The alternative, each flag a quoted word of
// ExecStart=, would pass any value, but none of kubelet's values needs more than plainWord allows, and the flags
// would leave /etc/default/kubelet.
func KubeletEnv(flags []string) (string, error) {
	for _, f := range flags {
		if !plainWord(f) {
			return "", fmt.Errorf("kubelet flag %q cannot be passed through %s: only %s reach kubelet as exactly "+
				"one argument of $DAEMON_ARGS; fix the cluster spec (kubeup validates it) and run kubeup update cluster again", f, KubeletEnvFile, plainChars)
		}
	}
	line, err := envAssignment("DAEMON_ARGS", strings.Join(flags, " "))
	if err != nil {
		return "", err
	}
	return "# Managed by kubeup (nodeup): kubelet's flags, from the cluster spec.\n" + line, nil
}

// The units nodeup installs. Their values are constants, written by systemd's quoting rules all the same.
var (
	KubeletUnit = `# Managed by kubeup (nodeup).
[Unit]
Description=Kubernetes kubelet
Documentation=https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/
Requires=containerd.service
After=containerd.service

[Service]
EnvironmentFile=` + must(unitPath(KubeletEnvFile)) + `
ExecStart=` + must(execLine(KubeletBinary)) + ` $DAEMON_ARGS
Restart=always
RestartSec=2s
KillMode=process

[Install]
WantedBy=multi-user.target
`

	// protokube starts kubelet itself, each round: its unit neither wants nor waits for kubelet's. Nor does it
	// wait for the network: a round that cannot reach the cloud or DNS fails, and the next one tries again.
	ProtokubeUnit = `# Managed by kubeup (nodeup).
[Unit]
Description=protokube: claims and mounts this node's etcd volumes, runs etcd, keeps DNS right, keeps kubelet running

[Service]
ExecStart=` + must(execLine(ProtokubeBinary, "--conf="+NodeConfFile)) + `
Restart=always
RestartSec=5s
RestartPreventExitStatus=` + strconv.Itoa(ProtokubeExitNotControlPlane) + `

[Install]
WantedBy=multi-user.target
`
)

// ProtokubeExitNotControlPlane is the status protokube exits with when its node configuration is not a
// control-plane node's (LSB's "program is not configured"): its unit does not restart it after that status, which
// a restart would only meet again. nodeup restarts protokube.service when it writes the node configuration.
const ProtokubeExitNotControlPlane = 6

// must panics on an error from writing a constant: a programmer's error, found when the package loads.
func must(s string, err error) string {
	if err != nil {
		panic(fmt.Sprintf("model: %v", err))
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// Paths on a node.
const (
	KubeletEnvFile  = "/etc/default/kubelet"
	KubeletBinary   = "/usr/local/bin/kubelet"
	ProtokubeBinary = "/usr/local/bin/protokube"
	// nodeConfFile is the node configuration nodeup converged the node to, as Encode writes it (its sha256 on
	// the first line): what protokube reads, with the same checks as nodeup, to run the same node tasks.
	NodeConfFile       = "/etc/kubeup/node.conf"
	systemdUnitDir     = "/etc/systemd/system"
	controlPlaneTaint  = "node-role.kubernetes.io/control-plane=:NoSchedule"
	instanceGroupLabel = "kubeup.dev/instancegroup"
)
