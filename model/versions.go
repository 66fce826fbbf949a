package model

import "fmt"

// The Kubernetes versions kubeup supports: the minor releases whose components' flags the model writes, each
// flag checked against that release. The oldest is the first where kube-proxy's nftables mode (a proxyMode kubeup
// accepts) is on by default; the newest is DefaultKubernetesVersion's, which the tests run.
const (
	MinKubernetesVersion = "1.31"
	MaxKubernetesVersion = "1.34"
	minKubernetesMinor   = 31
	maxKubernetesMinor   = 34
)

// kubernetesVersionProblem checks spec.kubernetesVersion: a version, in the supported range.
func kubernetesVersionProblem(v string) string {
	major, minor, _, err := ParseVersion(v)
	switch {
	case err != nil:
		return fmt.Sprintf("%s is not a version: want MAJOR.MINOR.PATCH, for example %s", Echo(v), DefaultKubernetesVersion)
	case major != 1 || minor < minKubernetesMinor || minor > maxKubernetesMinor:
		return fmt.Sprintf("%q is not supported: kubeup supports Kubernetes %s to %s (the releases whose flags it writes); use for example %s",
			v, MinKubernetesVersion, MaxKubernetesVersion, DefaultKubernetesVersion)
	}
	return ""
}
