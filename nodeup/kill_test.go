package nodeup

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The nodeup binary killed with SIGKILL at random points of an apply, as a machine loses power or the OOM killer
// strikes at boot, then run again to its end: the node's tree is the one a clean apply makes.

// killedRuns is how many killed applies make test runs; KUBEUP_SOAK=1 runs soakKilledRuns.
const (
	killedRuns     = 20
	soakKilledRuns = 400
)

// tempFile matches the temporary files nodeup's writers make beside their target (".<name>.tmp-<suffix>"):
// nodetasks' atomic writes, symbolic links and the installed executable.
var tempFile = regexp.MustCompile(`^\..+\.tmp-[0-9a-z]+$`)

// built says whether nodeupBinary ran (TestMain removes what it built).
var built bool

// nodeupBinary builds cmd/nodeup once for the package's tests (static, as a node gets it).
var nodeupBinary = sync.OnceValues(func() (string, error) {
	built = true
	dir, err := os.MkdirTemp("", "nodeup-kill-test-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "nodeup")
	cmd := exec.Command("go", "build", "-o", bin, "kubeup.dev/kubeup/cmd/nodeup")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build kubeup.dev/kubeup/cmd/nodeup: %w\n%s", err, out)
	}
	return bin, nil
})

// killSeed is the seed of the kill delays: KUBEUP_KILL_SEED, else the clock (logged, to replay a failure).
func killSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("KUBEUP_KILL_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KUBEUP_KILL_SEED=%q: %v", s, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// nodeTree is what a node's tree holds: each path (relative to the root) with its type, permission bits, and
// content (regular files) or target (symbolic links).
type nodeTree map[string]nodeEntry

type nodeEntry struct {
	mode    fs.FileMode
	content []byte
	target  string
}

func (e nodeEntry) String() string {
	switch {
	case e.mode.IsRegular():
		return fmt.Sprintf("%v, %d bytes, sha256 %s", e.mode, len(e.content), sha256Of(e.content)[:12])
	case e.mode&fs.ModeSymlink != 0:
		return fmt.Sprintf("%v -> %s", e.mode, e.target)
	}
	return e.mode.String()
}

func readTree(t *testing.T, root string) nodeTree {
	t.Helper()
	tree := nodeTree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		e := nodeEntry{mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			if e.content, err = os.ReadFile(p); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			if e.target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		tree[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// killedApply is one node: its root, the configuration under it, and nodeup's command line.
type killedApply struct {
	bin, root string
	args      []string
}

// newKilledApply lays out a root holding the control plane's node configuration at /var/lib/kubeup/node.conf (as
// the user data leaves it), and the command line of the first boot: pinned to its sha256, installing the unit.
func newKilledApply(t *testing.T, bin string, obj []byte) killedApply {
	t.Helper()
	root := t.TempDir()
	conf := writeConf(t, root, "var/lib/kubeup/node.conf", obj)
	sum, _, _ := bytes.Cut(bytes.TrimPrefix(obj, []byte("# sha256:")), []byte("\n"))
	return killedApply{bin: bin, root: root, args: []string{"--conf=" + conf, "--conf-sha256=" + string(sum), "--root=" + root,
		"--install-systemd-unit", "--retries=0"}}
}

func (k killedApply) command() *exec.Cmd {
	cmd := exec.Command(k.bin, k.args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	return cmd
}

// mustRun runs nodeup to its end and returns its stdout.
func (k killedApply) mustRun(t *testing.T) string {
	t.Helper()
	cmd := k.command()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nodeup %s: %v\n%s%s", strings.Join(k.args, " "), err, &stdout, &stderr)
	}
	return stdout.String()
}

// TestKilledNodeup kills nodeup (the binary, applying a control-plane configuration with --install-systemd-unit
// to a root of its own) with SIGKILL at random points, killedRuns times in a row on one root, each kill at a
// delay drawn from a clean apply's duration. After each kill, every file is either absent or whole (the clean
// apply's content: nothing truncated, the node configuration never torn), and nothing is there that a clean
// apply does not make but nodeup's temporary files. Then nodeup runs to its end: the tree is the clean apply's,
// path for path, mode, content and link target, with no temporary file left, and another run changes nothing.
func TestKilledNodeup(t *testing.T) {
	began := time.Now()
	bin, err := nodeupBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("go build cmd/nodeup: %v", time.Since(began).Round(time.Millisecond))
	obj := nodeConfig(t, "control-plane-a")

	clean := newKilledApply(t, bin, obj)
	start := time.Now()
	clean.mustRun(t)
	whole := time.Since(start)
	want := readTree(t, clean.root)
	if _, ok := want["usr/local/bin/nodeup"]; !ok {
		t.Fatalf("the clean apply installed no usr/local/bin/nodeup: %v", want)
	}

	runs := killedRuns
	if os.Getenv("KUBEUP_SOAK") == "1" {
		runs = soakKilledRuns
	}
	seed := killSeed(t)
	t.Logf("a clean apply takes %v; %d killed applies, seed %d (KUBEUP_KILL_SEED=%d replays the delays)", whole.Round(time.Millisecond), runs, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	k := newKilledApply(t, bin, obj)
	temps := 0
	killing := time.Now()
	for i := range runs {
		cmd := k.command()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(whole)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		got := readTree(t, k.root)
		for p, e := range got {
			w, ok := want[p]
			switch {
			case tempFile.MatchString(filepath.Base(p)):
				temps++ // a write the kill interrupted: the next run must remove it
			case !ok:
				t.Errorf("kill %d (after %v, %v): %s (%v) is not in a clean apply's tree", i, delay, err, p, e)
			case e.mode.IsRegular() && !bytes.Equal(e.content, w.content):
				t.Errorf("kill %d (after %v, %v): %s is torn: %v, want %v", i, delay, err, p, e, w)
			case e.mode.Type() != w.mode.Type() || e.target != w.target:
				t.Errorf("kill %d (after %v, %v): %s is %v, want %v", i, delay, err, p, e, w)
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d: stopping at kill %d", seed, i)
		}
	}
	t.Logf("%d temporary files seen right after a kill; the kills took %v", temps, time.Since(killing).Round(time.Millisecond))

	out := k.mustRun(t)
	got := readTree(t, k.root)
	for p, e := range got {
		if w, ok := want[p]; !ok {
			t.Errorf("after the run to the end: %s (%v) is left over (a clean apply makes no such file)", p, e)
		} else if e.mode != w.mode || !bytes.Equal(e.content, w.content) || e.target != w.target {
			t.Errorf("after the run to the end: %s is %v, want %v", p, e, w)
		}
	}
	for p, w := range want {
		if _, ok := got[p]; !ok {
			t.Errorf("after the run to the end: %s (%v) is missing", p, w)
		}
	}
	if t.Failed() {
		t.Fatalf("seed %d; the last run printed:\n%s", seed, out)
	}
	if out := k.mustRun(t); out != "No changes were needed\n" {
		t.Errorf("the run after printed:\n%s\nwant: No changes were needed", out)
	}
}
