package model

import (
	"fmt"
	"strings"
)

// Warnings returns what is valid in the user's spec c (as written, before Complete) but is likely a value left
// behind: an image set by hand whose tag names another version than the one it would otherwise follow. A
// component's image (kubeAPIServer, kubeControllerManager, kubeScheduler, kubeProxy) left out follows
// spec.kubernetesVersion; set, it stays at its tag when the version changes. An etcd cluster's image likewise
// against its version. A nodeup fetched over plain http is said too. Images pinned by digest alone, or whose tag is not a version, are not judged. The list is
// ordered by path; nil when there is nothing to say. Warnings never stop a spec from being stored or applied.
func Warnings(c *Cluster) []Problem {
	if c == nil {
		return nil
	}
	full, _ := Complete(c, nil)
	s, version := &c.Spec, full.Spec.KubernetesVersion
	var ps problems
	component := func(path, image string) {
		if tag, ok := versionTag(image); ok && !sameVersion(tag, version) {
			ps.add(path, "%s is tagged %s, not spec.kubernetesVersion %s: this component stays at %s. Leave the image out to follow kubernetesVersion, or set its tag to it",
				image, tag, version, tag)
		}
	}
	if s.KubeAPIServer != nil {
		component("spec.kubeAPIServer.image", s.KubeAPIServer.Image)
	}
	if s.KubeControllerManager != nil {
		component("spec.kubeControllerManager.image", s.KubeControllerManager.Image)
	}
	if s.KubeScheduler != nil {
		component("spec.kubeScheduler.image", s.KubeScheduler.Image)
	}
	if s.KubeProxy != nil {
		component("spec.kubeProxy.image", s.KubeProxy.Image)
	}
	for i, e := range s.EtcdClusters {
		if i >= len(full.Spec.EtcdClusters) {
			break
		}
		v := full.Spec.EtcdClusters[i].Version
		if tag, ok := versionTag(e.Image); ok && !sameVersion(tag, v) {
			ps.add(Index("spec.etcdClusters", i)+".image", "%s is tagged %s, not this etcd cluster's version %s: etcd runs %s. Leave the image out to follow version, or set its tag to it",
				e.Image, tag, v, tag)
		}
	}
	if s.Nodeup != nil && strings.HasPrefix(s.Nodeup.URL, "http://") {
		ps.add("spec.nodeup.url", "%s is plain http: the download is not protected in transit (the machines still refuse a binary whose sha256 is not spec.nodeup.sha256); prefer https://",
			s.Nodeup.URL)
	}
	return ps.list
}

// versionTag returns an image's tag when it is a version (v1.34.2, 3.5.21-0); false for no tag, a tag that is not
// a version, or an image pinned by digest alone.
func versionTag(image string) (string, bool) {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return "", false
	}
	tag := image[i+1:]
	if _, _, _, err := ParseVersion(tag); err != nil {
		return "", false
	}
	return tag, true
}

// sameVersion reports whether a tag names version: the same major, minor and patch numbers, whatever the "v" or
// the suffix ("3.5.21-0" is etcd 3.5.21).
func sameVersion(tag, version string) bool {
	a1, b1, c1, err1 := ParseVersion(tag)
	a2, b2, c2, err2 := ParseVersion(version)
	return err1 != nil || err2 != nil || fmt.Sprint(a1, b1, c1) == fmt.Sprint(a2, b2, c2)
}
