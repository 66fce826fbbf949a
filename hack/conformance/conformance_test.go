package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kubernetesPins is what a go.mod says of Kubernetes: the k8s.io/kubernetes it requires and its replace
// directives of the k8s.io staging modules, a line each.
func kubernetesPins(goMod string) []string {
	var pins []string
	for _, line := range strings.Split(goMod, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		switch {
		case len(f) >= 2 && f[0] == "k8s.io/kubernetes":
			pins = append(pins, f[0]+" "+f[1])
		case len(f) == 4 && f[1] == "=>" && strings.HasPrefix(f[0], "k8s.io/"):
			pins = append(pins, strings.Join(f, " "))
		}
	}
	return pins
}

// The e2e test binary and agnhost are built from the Kubernetes the cluster runs: hack/kube-binaries' (which a
// test of internal/e2e holds to model.DefaultKubernetesVersion), with the same staging modules.
func TestKubernetesIsTheClusters(t *testing.T) {
	ours := kubernetesPins(readFile(t, "go.mod"))
	theirs := kubernetesPins(readFile(t, "../kube-binaries/go.mod"))
	if len(ours) == 0 || strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
		t.Errorf("hack/conformance/go.mod pins\n%s\nhack/kube-binaries/go.mod pins\n%s\nchange them together",
			strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
	}
}

// kubernetesDir is where the module cache holds the k8s.io/kubernetes go.mod requires (go downloads it).
func kubernetesDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		if out, err := exec.Command("go", "mod", "download", "k8s.io/kubernetes").CombinedOutput(); err != nil {
			t.Fatalf("go mod download k8s.io/kubernetes: %v\n%s", err, out)
		}
		return kubernetesDir(t)
	}
	return dir
}

var importRE = regexp.MustCompile(`(?m)^\s*(?:[A-Za-z_][A-Za-z0-9_]*\s+)?"([^"]+)"`)

// imports is the packages a Go file's import block names (the standard library left out).
func imports(src string) map[string]bool {
	block := src[strings.Index(src, "import ("):]
	block = block[:strings.Index(block, "\n)")]
	got := map[string]bool{}
	for _, m := range importRE.FindAllStringSubmatch(block, -1) {
		if strings.Contains(strings.SplitN(m[1], "/", 2)[0], ".") {
			got[m[1]] = true
		}
	}
	return got
}

// tools.go names every package the e2e suite's test file imports, so that go.mod and go.sum hold all that
// `go test -c k8s.io/kubernetes/test/e2e` compiles: a new Kubernetes whose test file imports another package
// fails here, naming it, before a 30-minute build would.
func TestE2EImportsPinned(t *testing.T) {
	want := imports(readFile(t, filepath.Join(kubernetesDir(t), "test/e2e/e2e_test.go")))
	have := imports(readFile(t, "tools.go"))
	if len(want) == 0 {
		t.Fatal("found no imports in test/e2e/e2e_test.go")
	}
	for p := range want {
		if !have[p] {
			t.Errorf("test/e2e/e2e_test.go imports %s, tools.go does not: add it and run go mod tidy", p)
		}
	}
	if !have["k8s.io/kubernetes/test/e2e"] {
		t.Error("tools.go does not import k8s.io/kubernetes/test/e2e")
	}
}

// conformanceNames is the name of every upstream conformance test (test/conformance/testdata/conformance.yaml's
// codenames, folded onto one line each).
func conformanceNames(t *testing.T) []string {
	t.Helper()
	yaml := readFile(t, filepath.Join(kubernetesDir(t), "test/conformance/testdata/conformance.yaml"))
	var names []string
	for _, m := range regexp.MustCompile(`(?ms)^  codename: '((?:[^']|'')*)'`).FindAllStringSubmatch(yaml, -1) {
		names = append(names, strings.Join(strings.Fields(strings.ReplaceAll(m[1], "''", "'")), " "))
	}
	if len(names) < 100 {
		t.Fatalf("conformance.yaml: %d codenames; want the whole list", len(names))
	}
	return names
}

// Each line of the focus compiles and selects at least one conformance test, and only conformance tests; the
// whole focus selects every area issue 26 names.
func TestFocus(t *testing.T) {
	names := conformanceNames(t)
	var lines []string
	for _, line := range strings.Split(readFile(t, "focus"), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	for _, line := range lines {
		re, err := regexp.Compile(line)
		if err != nil {
			t.Errorf("focus: %q: %v", line, err)
			continue
		}
		n := 0
		for _, name := range names {
			if re.MatchString(name) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("focus: %q selects no conformance test", line)
		}
	}
	focus := regexp.MustCompile(strings.Join(lines, "|"))
	for _, area := range []string{
		`[sig-network] DNS should provide DNS for the cluster`,
		`[sig-network] Services should serve a basic endpoint from pods`,
		`[sig-network] Services should be able to create a functioning NodePort service`,
		`[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http`,
		`[sig-node] Pods should be submitted and removed`,
		`[sig-storage] ConfigMap should be consumable from pods in volume`,
		`[sig-storage] Secrets should be consumable from pods in volume`,
		`[sig-node] Container Lifecycle Hook when create a pod with lifecycle hook should execute poststart exec hook properly`,
		`[sig-apps] Deployment RollingUpdateDeployment should delete old pods and create new ones`,
		`[sig-apps] ReplicaSet should serve a basic image on each replica with a public image`,
		`[sig-cli] Kubectl logs logs should be able to retrieve and filter logs`,
		`[sig-node] Pods should support remote command execution over websockets`,
	} {
		found := false
		for _, name := range names {
			if strings.HasPrefix(name, area) && focus.MatchString(name) {
				found = true
			}
		}
		if !found {
			t.Errorf("the focus does not select %q", area)
		}
	}
}

// makeVar is the value of a `NAME := VALUE` line of the Makefile.
func makeVar(t *testing.T, makefile, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` := (.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return strings.TrimSpace(m[1])
}

// The test images make conformance-deps writes are the ones e2e.test asks for: each NAME:TAG of
// CONFORMANCE_IMAGES is an image of test/utils/image/manifest.go at that tag, and repo-list.yaml maps its
// registry to E2E_REGISTRY, the registry the archives are named in.
func TestImagesAreTheManifests(t *testing.T) {
	makefile := readFile(t, "../../Makefile")
	registry := makeVar(t, makefile, "E2E_REGISTRY")
	manifest := readFile(t, filepath.Join(kubernetesDir(t), "test/utils/image/manifest.go"))
	// The YAML key of each field of RegistryList.
	keys := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\s+(\\w+Registry)\\s+string\\s+`yaml:\"(\\w+)\"`").FindAllStringSubmatch(manifest, -1) {
		keys[m[1]] = m[2]
	}
	repoList := map[string]string{}
	for _, line := range strings.Split(readFile(t, "repo-list.yaml"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			repoList[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for _, image := range strings.Fields(makeVar(t, makefile, "CONFORMANCE_IMAGES")) {
		name, tag, _ := strings.Cut(image, ":")
		m := regexp.MustCompile(`Config\{list\.(\w+), "` + regexp.QuoteMeta(name) + `", "` + regexp.QuoteMeta(tag) + `"\}`).FindStringSubmatch(manifest)
		if m == nil {
			t.Errorf("CONFORMANCE_IMAGES: %s: manifest.go names no %s image at %s", image, name, tag)
			continue
		}
		if key := keys[m[1]]; key == "" || repoList[key] != registry {
			t.Errorf("%s is in %s (yaml key %q): repo-list.yaml maps it to %q, want %s", image, m[1], key, repoList[key], registry)
		}
	}
}
