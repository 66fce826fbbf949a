package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeBinaries are the binaries the machines run, by name: the local provider's builds (no cloud SDK) and each
// cloud's (its own SDK only). The names are the table's (hack/perftable).
// releaseTags are the build tags of `make build` (BUILD_TAGS).
const releaseTags = "grpcnotrace"

var nodeBinaries = []string{"nodeup", "nodeup-aws", "nodeup-gce", "protokube", "protokube-aws", "protokube-gce"}

// BenchmarkNodeBinarySize builds each node binary as a release is built (static, linux/amd64, -trimpath, the
// Makefile's build tags) and stripped (-s -w), and reports its size: what a machine downloads at boot and maps
// into memory.
//
//	BenchmarkNodeBinarySize/<binary>
//	    mb-stripped   the stripped binary's size in MB (10^6 bytes)
func BenchmarkNodeBinarySize(b *testing.B) {
	dir := b.TempDir()
	for _, name := range nodeBinaries {
		b.Run(name, func(b *testing.B) {
			out := filepath.Join(dir, name)
			for range b.N {
				cmd := exec.Command("go", "build", "-tags", releaseTags, "-trimpath", "-ldflags=-s -w", "-o", out, "kubeup.dev/kubeup/cmd/"+name)
				cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
				if msg, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("go build cmd/%s: %v\n%s", name, err, msg)
				}
			}
			st, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Size())/1e6, "mb-stripped")
		})
	}
}

// TestReleaseTagsAreTheMakefiles: BenchmarkNodeBinarySize builds with the tags `make build` uses, so the sizes it
// reports are the released binaries'.
func TestReleaseTagsAreTheMakefiles(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if want := "\nBUILD_TAGS := " + releaseTags + "\n"; !strings.Contains(string(mk), want) {
		t.Errorf("the Makefile has no line %q: releaseTags and BUILD_TAGS must name the same tags", strings.TrimSpace(want))
	}
}
