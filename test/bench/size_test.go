package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nodeBinaries are the binaries the machines run, by name: the local provider's builds (no cloud SDK) and each
// cloud's (its own SDK only). The names are the table's (hack/perftable).
var nodeBinaries = []string{"nodeup", "nodeup-aws", "nodeup-gce", "protokube", "protokube-aws", "protokube-gce"}

// BenchmarkNodeBinarySize builds each node binary as a release is built (static, linux/amd64, -trimpath) and
// stripped (-s -w), and reports its size: what a machine downloads at boot and maps into memory.
//
//	BenchmarkNodeBinarySize/<binary>
//	    mb-stripped   the stripped binary's size in MB (10^6 bytes)
func BenchmarkNodeBinarySize(b *testing.B) {
	dir := b.TempDir()
	for _, name := range nodeBinaries {
		b.Run(name, func(b *testing.B) {
			out := filepath.Join(dir, name)
			for range b.N {
				cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "kubeup.dev/kubeup/cmd/"+name)
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
