package cloudup

import (
	"io"
	"testing"

	"kubeup.dev/kubeup/model"
)

// withProvider registers p as the provider of cloud name for the test's time (cloudup's tests run one at a time).
func withProvider(t *testing.T, name string, p Provider) {
	t.Helper()
	RegisterProvider(name, p)
	t.Cleanup(func() { delete(providers, name) })
}

// TestProviderFor: the local provider is built in, and a cloud this kubeup has none for (here every cloud but
// local: cloudup's tests link no other provider) is an error that names the cluster, spec.cloudProvider's value
// and the clouds it has, from every entry point. cmd/kubeup's TestKubeupHasEveryCloud holds the clouds the binary
// has.
func TestProviderFor(t *testing.T) {
	c := &model.Cluster{Metadata: model.ObjectMeta{Name: "demo.example.com"}, Spec: model.ClusterSpec{CloudProvider: model.CloudLocal}}
	if p, err := providerFor(c); err != nil || p != (localProvider{}) {
		t.Errorf("providerFor(local) = %v, %v: want the local provider", p, err)
	}
	c.Spec.CloudProvider = "azure"
	const want = `cluster demo.example.com: spec.cloudProvider "azure" is not a cloud this kubeup has (it has local)`
	if _, err := providerFor(c); err == nil || err.Error() != want {
		t.Errorf("providerFor(azure) = %v, want %s", err, want)
	}
	if err := WriteCloudGraph(io.Discard, c, nil); err == nil || err.Error() != want {
		t.Errorf("WriteCloudGraph(azure) = %v, want %s", err, want)
	}
	if _, err := (&Clusters{}).openRolling(t.Context(), c, nil); err == nil || err.Error() != want {
		t.Errorf("openRolling(azure) = %v, want %s", err, want)
	}
	if got := credentialWarnings(c); got != nil {
		t.Errorf("credentialWarnings(azure) = %v, want none", got)
	}
	if w, err := CheckZones(t.Context(), "test", c); w != "" || err != nil {
		t.Errorf("CheckZones(azure) = %q, %v: want the zones unchecked", w, err)
	}

	withProvider(t, "azure", localProvider{})
	if p, err := providerFor(c); err != nil || p == nil {
		t.Errorf("providerFor(azure), registered = %v, %v: want its provider", p, err)
	}
}

// TestRegisterProviderTwice: registering a cloud's name a second time, or without a name or a value, is a
// programmer's error: it panics, and the first provider stays.
func TestRegisterProviderTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Provider
	}{{model.CloudLocal, localProvider{}}, {"", localProvider{}}, {"other", nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterProvider(%q, %v) did not panic", tc.name, tc.p)
				}
			}()
			RegisterProvider(tc.name, tc.p)
		}()
	}
	if providers[model.CloudLocal] != (localProvider{}) {
		t.Errorf("the local provider is %v after a second registration", providers[model.CloudLocal])
	}
	if _, ok := providers["other"]; ok {
		t.Error("a nil provider was registered")
	}
}
