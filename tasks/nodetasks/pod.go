package nodetasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"sigs.k8s.io/yaml"
)

// Pod is a Kubernetes Pod as far as static pods need it, with the JSON field names of core/v1. APIVersion and
// Kind default to "v1" and "Pod" in the manifest.
type Pod struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
}

// ObjectMeta is the metadata of a static pod.
type ObjectMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodSpec is the spec of a static pod.
type PodSpec struct {
	HostNetwork       bool         `json:"hostNetwork,omitempty"`
	PriorityClassName string       `json:"priorityClassName,omitempty"`
	Containers        []Container  `json:"containers"`
	Volumes           []Volume     `json:"volumes,omitempty"`
	Tolerations       []Toleration `json:"tolerations,omitempty"`
}

// Container is one container of a static pod.
type Container struct {
	Name           string               `json:"name"`
	Image          string               `json:"image"`
	Command        []string             `json:"command,omitempty"`
	Args           []string             `json:"args,omitempty"`
	Env            []EnvVar             `json:"env,omitempty"`
	Ports          []ContainerPort      `json:"ports,omitempty"`
	VolumeMounts   []VolumeMount        `json:"volumeMounts,omitempty"`
	Resources      ResourceRequirements `json:"resources,omitempty"`
	LivenessProbe  *Probe               `json:"livenessProbe,omitempty"`
	ReadinessProbe *Probe               `json:"readinessProbe,omitempty"`
	StartupProbe   *Probe               `json:"startupProbe,omitempty"`
	// SecurityContext is set for containers that need privileges, such as kube-proxy writing iptables rules.
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`
}

// SecurityContext holds a container's privileges.
type SecurityContext struct {
	Privileged *bool `json:"privileged,omitempty"`
}

// EnvVar is an environment variable with a literal value.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// ContainerPort is a port a container listens on.
type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	HostPort      int32  `json:"hostPort,omitempty"`
	Protocol      string `json:"protocol,omitempty"`
}

// VolumeMount mounts a volume of the pod into a container.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// ResourceRequirements are quantities ("100m", "256Mi") by resource name ("cpu", "memory").
type ResourceRequirements struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Probe is a container's health check over HTTP.
type Probe struct {
	HTTPGet             *HTTPGetAction `json:"httpGet,omitempty"`
	InitialDelaySeconds int32          `json:"initialDelaySeconds,omitempty"`
	TimeoutSeconds      int32          `json:"timeoutSeconds,omitempty"`
	PeriodSeconds       int32          `json:"periodSeconds,omitempty"`
	FailureThreshold    int32          `json:"failureThreshold,omitempty"`
}

// HTTPGetAction is an HTTP GET against the container. Port is a number.
type HTTPGetAction struct {
	Host   string `json:"host,omitempty"`
	Path   string `json:"path,omitempty"`
	Port   int32  `json:"port"`
	Scheme string `json:"scheme,omitempty"`
}

// Volume is a volume of the pod: a path on the host.
type Volume struct {
	Name     string                `json:"name"`
	HostPath *HostPathVolumeSource `json:"hostPath,omitempty"`
}

// HostPathVolumeSource is a file or directory on the host. Type is empty or one of core/v1's HostPathType
// values ("DirectoryOrCreate", "File", ...).
type HostPathVolumeSource struct {
	Path string `json:"path"`
	Type string `json:"type,omitempty"`
}

// Toleration lets the pod run on a node with a matching taint.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// String names the pod, as the dry run shows it.
func (p Pod) String() string {
	if p.Metadata.Namespace == "" {
		return "Pod " + p.Metadata.Name
	}
	return "Pod " + p.Metadata.Namespace + "/" + p.Metadata.Name
}

// YAML renders the pod as a manifest. The output is byte-stable: keys are sorted, empty fields left out.
//
// It is sigs.k8s.io/yaml's Marshal (the pod's JSON, converted to YAML) with the conversion remembered: the YAML
// is a function of the JSON alone, and protokube renders the same few pods every round, so a pod whose JSON was
// converted before takes its YAML from renderedYAML instead of parsing and emitting it again.
func (p *Pod) YAML() (string, error) {
	c := *p
	if c.APIVersion == "" {
		c.APIVersion = "v1"
	}
	if c.Kind == "" {
		c.Kind = "Pod"
	}
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer jsonBuffers.Put(buf)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(c); err != nil { // json.Marshal's bytes, and a newline
		return "", fmt.Errorf("rendering %s as YAML: %w", p, err)
	}
	j := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if y, ok := renderedYAML.get(j); ok {
		return y, nil
	}
	b, err := yaml.JSONToYAML(j)
	if err != nil {
		return "", fmt.Errorf("rendering %s as YAML: %w", p, err)
	}
	y := string(b)
	renderedYAML.put(j, y)
	return y, nil
}

// yamlMemo remembers the YAML of the pods' JSON it was given, up to maxEntries of them: a node runs a handful of
// static pods; a process that renders more starts over.
type yamlMemo struct {
	mu sync.Mutex
	m  map[string]string // JSON -> YAML
}

const maxRenderedYAML = 32

// jsonBuffers holds the buffers YAML encodes pods' JSON into.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var renderedYAML yamlMemo

func (m *yamlMemo) get(j []byte) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	y, ok := m.m[string(j)]
	return y, ok
}

func (m *yamlMemo) put(j []byte, y string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxRenderedYAML {
		m.m = make(map[string]string, maxRenderedYAML)
	}
	m.m[string(j)] = y
}
