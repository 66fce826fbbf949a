package e2e

import (
	"os"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// The etcd that `make images` builds is the version kubeup deploys by default (its image is named for
// model.DefaultEtcdVersion), and the images the Makefile names are the ones the tests look for: change
// hack/etcd/go.mod, model.DefaultEtcdVersion, the Makefile's PAUSE_IMAGE and HELLO_IMAGE and PauseImage and
// HelloImage together.
func TestImagesAreTheDefaults(t *testing.T) {
	goMod := readFile(t, "../../hack/etcd/go.mod")
	built := ""
	for _, line := range strings.Split(goMod, "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0] == "go.etcd.io/etcd/server/v3" {
			built = strings.TrimPrefix(f[1], "v")
		}
	}
	if built != model.DefaultEtcdVersion {
		t.Errorf("hack/etcd/go.mod builds go.etcd.io/etcd/server/v3 %q, model.DefaultEtcdVersion is %q: change them together",
			built, model.DefaultEtcdVersion)
	}
	makefile := readFile(t, "../../Makefile")
	for variable, want := range map[string]string{"PAUSE_IMAGE": PauseImage, "HELLO_IMAGE": HelloImage} {
		got := ""
		for _, line := range strings.Split(makefile, "\n") {
			if v, ok := strings.CutPrefix(line, variable+" := "); ok {
				got = strings.TrimSpace(v)
			}
		}
		if got != want {
			t.Errorf("the Makefile's %s is %q, internal/e2e's is %q: change them together", variable, got, want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
