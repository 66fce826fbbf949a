package nodegraph

import (
	"kubeup.dev/kubeup/model"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"kubeup.dev/kubeup/tasks/nodetasks"
)

// The static pods of a node: each runs one component with the flags of its configuration (Flags), on the host's
// network, with the host paths it reads mounted read-only.

// KubeAPIServerPod is kube-apiserver's static pod.
func KubeAPIServerPod(a *model.KubeAPIServerConfig) *nodetasks.Pod {
	port := int32(443)
	if a.SecurePort != nil {
		port = *a.SecurePort
	}
	p := staticPod("kube-apiserver", a.Image, "/usr/local/bin/kube-apiserver", model.Flags(a), "150m")
	c := &p.Spec.Containers[0]
	c.Ports = []nodetasks.ContainerPort{{Name: "https", ContainerPort: port, HostPort: port}}
	// kubelet's probe carries no credentials: with anonymous requests refused it would get 401 every time and
	// restart kube-apiserver in a loop.
	if a.AnonymousAuth == nil || *a.AnonymousAuth {
		c.LivenessProbe = httpsProbe("/livez", port)
	}
	mountHostPaths(p, hostDirs([]string{model.SrvKubernetes, "/etc/ssl/certs"}, a.ClientCAFile, a.TLSCertFile, a.TLSPrivateKeyFile,
		a.EtcdCAFile, a.EtcdCertFile, a.EtcdKeyFile, a.KubeletClientCertificate, a.KubeletClientKey,
		a.RequestheaderClientCAFile, a.ProxyClientCertFile, a.ProxyClientKeyFile,
		a.ServiceAccountKeyFile, a.ServiceAccountSigningKeyFile, a.KubeletCertificateAuthority)...)
	return p
}

// hostDirs returns dirs, then the directory of each file that none of them holds already: what a component's
// pod mounts to read its files, wherever the spec puts them.
func hostDirs(dirs []string, files ...string) []string {
	for _, f := range files {
		if f == "" {
			continue
		}
		d := path.Dir(f)
		held := false
		for _, m := range dirs {
			if d == m || strings.HasPrefix(d, m+"/") {
				held = true
				break
			}
		}
		if !held {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func kubeControllerManagerPod(m *model.KubeControllerManagerConfig) *nodetasks.Pod {
	p := staticPod("kube-controller-manager", m.Image, "/usr/local/bin/kube-controller-manager", model.Flags(m), "100m")
	p.Spec.Containers[0].LivenessProbe = httpsProbe("/healthz", 10257)
	mountHostPaths(p, hostDirs([]string{model.SrvKubernetes, "/etc/ssl/certs", path.Dir(m.Kubeconfig)}, m.ServiceAccountPrivateKeyFile, m.RootCAFile,
		m.ClusterSigningKubeletClientCertFile, m.ClusterSigningKubeletClientKeyFile, m.ClusterSigningKubeletServingCertFile, m.ClusterSigningKubeletServingKeyFile)...)
	return p
}

func kubeSchedulerPod(s *model.KubeSchedulerConfig) *nodetasks.Pod {
	p := staticPod("kube-scheduler", s.Image, "/usr/local/bin/kube-scheduler", model.Flags(s), "100m")
	p.Spec.Containers[0].LivenessProbe = httpsProbe("/healthz", 10259)
	mountHostPaths(p, path.Dir(s.Kubeconfig))
	return p
}

func kubeProxyPod(k *model.KubeProxyConfig) *nodetasks.Pod {
	p := staticPod("kube-proxy", k.Image, "/usr/local/bin/kube-proxy", model.Flags(k), "100m")
	p.Spec.Containers[0].LivenessProbe = &nodetasks.Probe{
		HTTPGet:             &nodetasks.HTTPGetAction{Host: "127.0.0.1", Path: "/healthz", Port: 10256, Scheme: "HTTP"},
		InitialDelaySeconds: 15, TimeoutSeconds: 15,
	}
	p.Spec.Tolerations = []nodetasks.Toleration{{Operator: "Exists"}} // every node, tainted or not
	// It writes the node's iptables rules and conntrack settings.
	privileged := true
	p.Spec.Containers[0].SecurityContext = &nodetasks.SecurityContext{Privileged: &privileged}
	mountHostPaths(p, path.Dir(k.Kubeconfig), "/lib/modules", xtablesLock)
	return p
}

func staticPod(name, image, binary string, args []string, cpu string) *nodetasks.Pod {
	return &nodetasks.Pod{
		APIVersion: "v1",
		Kind:       "Pod",
		Metadata: nodetasks.ObjectMeta{
			Name:      name,
			Namespace: "kube-system",
			Labels:    map[string]string{"k8s-app": name},
		},
		Spec: nodetasks.PodSpec{
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			Containers: []nodetasks.Container{{
				Name:      name,
				Image:     image,
				Command:   []string{binary},
				Args:      args,
				Resources: nodetasks.ResourceRequirements{Requests: map[string]string{"cpu": cpu}},
			}},
		},
	}
}

func httpsProbe(path string, port int32) *nodetasks.Probe {
	return &nodetasks.Probe{
		HTTPGet:             &nodetasks.HTTPGetAction{Host: "127.0.0.1", Path: path, Port: port, Scheme: "HTTPS"},
		InitialDelaySeconds: 15, TimeoutSeconds: 15,
	}
}

// xtablesLock is the lock iptables' tools share on a node; kube-proxy takes it while it writes the rules.
const xtablesLock = "/run/xtables.lock"

// lockFiles are the host paths the model mounts as lock files: created as an empty file when missing, and
// writable. Any other path is a directory, read-only, whatever its name ends with.
var lockFiles = map[string]bool{xtablesLock: true}

// mountHostPaths mounts each host path read-only at the same path in the pod's container, except the lock files
// (lockFiles), which the container writes. A path given twice is mounted once.
func mountHostPaths(p *nodetasks.Pod, paths ...string) {
	c := &p.Spec.Containers[0]
	var unique []string
	for _, hp := range paths {
		if !slices.Contains(unique, hp) {
			unique = append(unique, hp)
		}
	}
	taken := make([]string, len(p.Spec.Volumes))
	for i, v := range p.Spec.Volumes {
		taken[i] = v.Name
	}
	names := volumeNames(unique, taken)
	for i, hp := range unique {
		typ := "DirectoryOrCreate"
		readOnly := true
		if lockFiles[hp] {
			typ, readOnly = "FileOrCreate", false
		}
		p.Spec.Volumes = append(p.Spec.Volumes, nodetasks.Volume{
			Name: names[i], HostPath: &nodetasks.HostPathVolumeSource{Path: hp, Type: typ},
		})
		c.VolumeMounts = append(c.VolumeMounts, nodetasks.VolumeMount{Name: names[i], MountPath: hp, ReadOnly: readOnly})
	}
}

// volumeNames names the volumes of the distinct host paths of one pod, none of them one of taken (the pod's
// volumes already). Each is named by volumeName; where that gives two paths the same name (/srv/kubernetes and
// /srv/kube/rnetes), the first of them in sorted order keeps it and the others get "-2", "-3"... appended, so
// that the names are unique, the same whatever order the clashing paths come in, and those without a clash are
// the names they always had.
func volumeNames(paths, taken []string) []string {
	names := make([]string, len(paths))
	used := map[string]bool{}
	for _, n := range taken {
		used[n] = true
	}
	byName := map[string][]int{}
	for i, hp := range paths {
		names[i] = volumeName(hp, i)
		byName[names[i]] = append(byName[names[i]], i)
	}
	for _, n := range names {
		used[n] = true
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		group := byName[name]
		if len(group) == 1 && !slices.Contains(taken, name) {
			continue
		}
		slices.SortFunc(group, func(a, b int) int { return strings.Compare(paths[a], paths[b]) })
		if !slices.Contains(taken, name) {
			group = group[1:] // the first keeps the name
		}
		k := 2
		for _, i := range group {
			for {
				suffix := "-" + strconv.Itoa(k)
				k++
				n := name[:min(len(name), 63-len(suffix))] + suffix
				if !used[n] {
					names[i], used[n] = n, true
					break
				}
			}
		}
	}
	return names
}

// volumeName names a host path's volume after the path's letters and digits (/srv/kubernetes -> srvkubernetes);
// the i-th path of a pod with none, or with more than 63, is hostpath<i>. Two paths may get the same name:
// volumeNames makes them unique.
func volumeName(hostPath string, i int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(hostPath) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || b.Len() > 63 {
		return "hostpath" + strconv.Itoa(i)
	}
	return b.String()
}
