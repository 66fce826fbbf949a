package gcelabels

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// GCE labels are lowercase letters, digits, '_' and '-', 63 characters at most, a key starting with a letter:
// kubeup's tags ("kubernetes.io/cluster/gce.example.com=owned", "k8s.io/etcd/main=a/a,b,c",
// "k8s.io/role/control-plane=1") cannot be labels as they are. This is their one encoding, used by every task, the
// model and protokube (through EncodeTags, DecodeLabels and the functions below):
//
//	tag                                   label(s)
//	kubernetes.io/cluster/<cluster>=owned kubeup-cluster-<hash8>=owned, kubeup-cluster-name=<sanitised cluster>
//	k8s.io/role/<role>=<v>                kubeup-role-<role>=<v>
//	k8s.io/etcd/<etcd>=<member>/<m1,m2>   kubeup-etcd-<etcd>=<member>_<m1>_<m2>
//	anything else                         itself, when it is a valid label (else EncodeTags fails)
//
// <hash8> is the first 8 hex digits of the SHA-256 of the cluster's name: clusters whose names sanitise alike
// ("a.b" and "a-b") stay apart, and a long name fits. The ownership label is what kubeup filters and deletes by;
// kubeup-cluster-name (the name lowercased, every other character '-', cut to 63) is for people reading labels.
// Member names are DNS labels (no '_'), so the etcd value decodes back exactly.
const (
	clusterLabelPrefix = "kubeup-cluster-"
	// ClusterNameLabel is the label that names the cluster for people (not unique: see ClusterLabelKey).
	ClusterNameLabel = "kubeup-cluster-name"
	roleLabelPrefix  = "kubeup-role-"
	etcdLabelPrefix  = "kubeup-etcd-"

	ClusterTagPrefix = "kubernetes.io/cluster/"
	roleTagPrefix    = "k8s.io/role/"
	etcdTagPrefix    = "k8s.io/etcd/"

	// OwnedValue is the value of the ownership label.
	OwnedValue = "owned"
)

var (
	LabelKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	LabelValueRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

// ClusterLabelKey is the key of the label that marks what cluster owns: kubeup-cluster-<hash8 of its name>.
// Its value is OwnedValue.
func ClusterLabelKey(cluster string) string { return clusterLabelPrefix + Hash8(cluster) }

// ClusterLabels are the labels of everything the cluster owns: the ownership label and the cluster's name.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{ClusterLabelKey(cluster): OwnedValue, ClusterNameLabel: LabelValue(cluster)}
}

// EtcdLabelKey is the label key naming an etcd member of etcd cluster etcd: kubeup-etcd-<etcd>.
func EtcdLabelKey(etcd string) string { return etcdLabelPrefix + etcd }

// EtcdLabels are the labels of the disk of member of etcd cluster etcd whose members are members: the member
// label (kubeup-etcd-<etcd>=<member>_<sorted members joined by '_'>) and the control-plane role.
func EtcdLabels(etcd, member string, members []string) map[string]string {
	sorted := slices.Sorted(slices.Values(members))
	return map[string]string{
		EtcdLabelKey(etcd):                member + "_" + strings.Join(sorted, "_"),
		roleLabelPrefix + "control-plane": "1",
	}
}

// LabelValue is s as a label value: lowercase, every character that a value cannot hold replaced by '-', cut to
// 63 characters. It does not decode: use it for values people read.
func LabelValue(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return string(b)
}

// EncodeTags returns the labels of kubeup's tags (see the table above). A tag that has no encoding and is not
// a valid label is an error that names it.
func EncodeTags(tags map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v := tags[k]
		switch {
		case strings.HasPrefix(k, ClusterTagPrefix):
			cluster := strings.TrimPrefix(k, ClusterTagPrefix)
			out[ClusterLabelKey(cluster)] = LabelValue(v)
			out[ClusterNameLabel] = LabelValue(cluster)
			continue
		case strings.HasPrefix(k, roleTagPrefix):
			k = roleLabelPrefix + strings.TrimPrefix(k, roleTagPrefix)
		case strings.HasPrefix(k, etcdTagPrefix):
			member, others, ok := strings.Cut(v, "/")
			if !ok {
				return nil, fmt.Errorf("tag %s=%s: an etcd member tag is <member>/<members joined by ','>", k, v)
			}
			k = etcdLabelPrefix + strings.TrimPrefix(k, etcdTagPrefix)
			v = member
			if others != "" {
				v += "_" + strings.ReplaceAll(others, ",", "_")
			}
		}
		if !LabelKeyRE.MatchString(k) {
			return nil, fmt.Errorf("tag %s: %q is not a GCE label key (a lowercase letter, then up to 62 of a-z, 0-9, '_' and '-')", k, k)
		}
		if !LabelValueRE.MatchString(v) {
			return nil, fmt.Errorf("tag %s: value %q is not a GCE label value (up to 63 of a-z, 0-9, '_' and '-')", k, v)
		}
		out[k] = v
	}
	return out, nil
}

// DecodeLabels returns the tags of labels, the inverse of EncodeTags: an ownership label becomes the cluster tag
// of the one of clusters whose hash it carries (left out when none does); kubeup-cluster-name is dropped; other
// labels are tags of their own key.
func DecodeLabels(labels map[string]string, clusters ...string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		switch {
		case k == ClusterNameLabel:
		case strings.HasPrefix(k, clusterLabelPrefix):
			for _, c := range clusters {
				if k == ClusterLabelKey(c) {
					out[ClusterTagPrefix+c] = v
				}
			}
		case strings.HasPrefix(k, roleLabelPrefix):
			out[roleTagPrefix+strings.TrimPrefix(k, roleLabelPrefix)] = v
		case strings.HasPrefix(k, etcdLabelPrefix):
			parts := strings.Split(v, "_")
			out[etcdTagPrefix+strings.TrimPrefix(k, etcdLabelPrefix)] = parts[0] + "/" + strings.Join(parts[1:], ",")
		default:
			out[k] = v
		}
	}
	return out
}

// ClustersOfTags returns the cluster names that the cluster tags of tags name.
func ClustersOfTags(tags map[string]string) []string {
	var out []string
	for k := range tags {
		if strings.HasPrefix(k, ClusterTagPrefix) {
			out = append(out, strings.TrimPrefix(k, ClusterTagPrefix))
		}
	}
	slices.Sort(out)
	return out
}

func Hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// ResourceName is name as a GCE resource name (a lowercase letter, then up to 62 of a-z, 0-9 and '-', not
// ending with '-'): lowercase, '.' and every other character a name cannot hold become '-', a name that does not
// start with a letter gets "k-" before it, and a name longer than max (at most 63) is cut and ends with the
// hash8 of the whole name, so that names cut alike stay apart. "a.etcd-main.gce.example.com" →
// "a-etcd-main-gce-example-com".
func ResourceName(name string, max int) string {
	if max <= 0 || max > 63 {
		max = 63
	}
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	s := string(b)
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "k-" + s
	}
	if len(s) > max {
		s = strings.TrimRight(s[:max-9], "-") + "-" + Hash8(name)
	}
	return strings.TrimRight(s, "-")
}

// validName reports whether name is a GCE resource name.
func ValidName(name string) bool { return resourceNameRE.MatchString(name) }

var resourceNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
