package model

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/golden"
)

func TestFlagsGolden(t *testing.T) {
	c, _ := completeSpec(t, CloudLocal, 3)
	etcd := c.Spec.EtcdClusters[0]
	etcd.HeartbeatInterval = ptr[int32](250)
	etcd.ElectionTimeout = ptr[int32](2500)
	etcd.QuotaBackendBytes = ptr[int64](8 << 30)
	etcd.SnapshotCount = ptr[int64](10000)
	etcd.LogLevel = "warn"
	tests := []struct {
		component string
		config    any
	}{
		{"kubelet", c.Spec.Kubelet},
		{"kube-apiserver", c.Spec.KubeAPIServer},
		{"kube-controller-manager", c.Spec.KubeControllerManager},
		{"kube-scheduler", c.Spec.KubeScheduler},
		{"kube-proxy", c.Spec.KubeProxy},
		{"etcd", etcd},
	}
	for _, tt := range tests {
		t.Run(tt.component, func(t *testing.T) {
			flags := Flags(tt.config)
			golden.Assert(t, "testdata/flags-"+tt.component+".golden", []byte(strings.Join(flags, "\n")+"\n"))
		})
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name   string
		config any
		want   []string
	}{
		{"nil config", (*KubeletConfig)(nil), nil},
		{"empty config", &KubeletConfig{}, []string{}},
		{
			name: "empty values are left out, zero values are not",
			config: &KubeletConfig{
				LogLevel:           ptr[int32](0),
				AnonymousAuth:      ptr(false),
				ClusterDNS:         "",
				NodeLabels:         map[string]string{},
				RegisterWithTaints: []string{},
				FeatureGates:       nil,
			},
			want: []string{"--anonymous-auth=false", "--v=0"},
		},
		{
			name: "lists keep their order, maps are sorted",
			config: &KubeAPIServerConfig{
				EnableAdmissionPlugins: []string{"NodeRestriction", "AlwaysPullImages"},
				FeatureGates:           map[string]string{"Zeta": "true", "Alpha": "false", "Mu": "true"},
			},
			want: []string{
				"--enable-admission-plugins=NodeRestriction,AlwaysPullImages",
				"--feature-gates=Alpha=false,Mu=true,Zeta=true",
			},
		},
		{
			name: "fields without a flag tag are not flags",
			config: &KubeProxyConfig{
				Image:     "registry.k8s.io/kube-proxy:v1.34.2",
				ProxyMode: "ipvs",
			},
			want: []string{"--proxy-mode=ipvs"},
		},
		{
			name: "an etcd cluster by value",
			config: EtcdClusterSpec{
				Name:          "main",
				ClientPort:    4001,
				SnapshotCount: ptr[int64](1 << 40),
				Members:       []EtcdMemberSpec{{Name: "a"}},
			},
			want: []string{"--snapshot-count=1099511627776"},
		},
		{
			name: "a complete etcd cluster leaves its tuning to etcd",
			config: func() EtcdClusterSpec {
				c, _ := completeSpec(t, CloudLocal, 3)
				return c.Spec.EtcdClusters[1]
			}(),
			want: []string{},
		},
		{
			name:   "sorted by flag name, not by field",
			config: &KubeSchedulerConfig{LogLevel: ptr[int32](4), BindAddress: "0.0.0.0", Kubeconfig: "/k", LeaderElect: ptr(true)},
			want:   []string{"--bind-address=0.0.0.0", "--kubeconfig=/k", "--leader-elect=true", "--v=4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Flags(tt.config)); diff != "" {
				t.Errorf("Flags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagsAreStable(t *testing.T) {
	labels := map[string]string{}
	for i := range 50 {
		labels[fmt.Sprintf("label-%02d", i)] = fmt.Sprint(i)
	}
	k := &KubeletConfig{NodeLabels: labels, FeatureGates: map[string]string{"B": "true", "A": "true", "C": "false"}}
	first := Flags(k)
	for range 20 {
		if diff := cmp.Diff(first, Flags(k)); diff != "" {
			t.Fatalf("Flags gave another answer (-first +now):\n%s", diff)
		}
	}
}

// TestEveryFlagField sets every field of every component configuration and checks that each `flag` tag gives
// exactly one flag of that name: no tag is used twice in a type, and Flags knows every kind of field.
func TestEveryFlagField(t *testing.T) {
	for _, config := range []any{
		&KubeletConfig{}, &KubeAPIServerConfig{}, &KubeControllerManagerConfig{}, &KubeSchedulerConfig{},
		&KubeProxyConfig{}, &EtcdClusterSpec{},
	} {
		v := reflect.ValueOf(config).Elem()
		t.Run(v.Type().Name(), func(t *testing.T) {
			var want []string
			for i := range v.NumField() {
				f := v.Type().Field(i)
				name, ok := f.Tag.Lookup("flag")
				if !ok {
					continue
				}
				want = append(want, name)
				fill(v.Field(i))
			}
			var got []string
			for _, flag := range Flags(config) {
				name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
				got = append(got, name)
			}
			if diff := cmp.Diff(slices.Sorted(slices.Values(want)), got); diff != "" {
				t.Errorf("flag names (-want +got):\n%s", diff)
			}
		})
	}
}

// fill gives v a value that is not empty.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.SetMapIndex(k, e)
	default:
		panic("fill: " + v.Kind().String())
	}
}

func TestFlagsPanicsOnANonStruct(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Flags(42) did not panic")
		}
	}()
	Flags(42)
}
