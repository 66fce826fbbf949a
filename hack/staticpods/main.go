// Command staticpods is a stand-in for kubelet for the demo and tests, not product code: it runs the static pods
// of one node (a network namespace and a filesystem root) with internal/staticpods, the core of the e2e tests'
// FakeKubelet, until SIGTERM or SIGINT, then stops them. `make demo` runs one per control-plane node, for the
// etcd-* manifests only: the other static pods need the Kubernetes binaries that come with a later issue.
//
//	staticpods --netns NAME --root DIR [--manifests /etc/kubernetes/manifests] [--only 'etcd-*'] --log-dir DIR \
//		[--binary /usr/local/bin/kube-apiserver=/var/cache/kubeup/bin/v1.34.2/kube-apiserver ...]
//
// A --binary COMMAND=FILE runs the host file FILE for a container whose command is COMMAND, bound at COMMAND's
// path in the pod's own root filesystem (staticpods.Config.Binaries): `make kube-binaries` builds the Kubernetes
// components into $KUBEUP_KUBE_BIN. A command without one must be installed on the host, as Debian's etcd is.
//
// With --kubeconfig it also plays kubelet's API half (staticpods.KubeletAPI, a stand-in too): it registers the
// node --node-name with the labels and taints of the node's kubelet flags (<root>/etc/default/kubelet, as nodeup
// wrote them), renews its Ready condition with --node-ip every 2s, and posts a mirror pod of each static pod it
// runs, so that `kubeup validate cluster` finds what a kubelet would have reported. It calls the API with the
// cluster admin's credentials of that kubeconfig (`kubeup export kubeconfig`): kubelet client certificates are
// not issued yet (docs/pki.md). It connects to the first --api-address (the node's own kube-apiserver, as a
// control-plane kubelet does; after a failed round, the next one) with the kubeconfig's server name for TLS: the
// host does not resolve the cluster's names.
//
//	staticpods ... --kubeconfig FILE --node-name NAME --node-ip IP [--api-address HOST[:PORT] ...]
//
// Each pod's output goes to <log-dir>/<manifest>.log, and the process id of its running process to
// <log-dir>/<manifest>.pid ("PID START", START its start time from /proc/PID/stat; removed when it stops), so that
// a clean-up finds it by its id, and tells it from a later process that reuses the id.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kubeup.dev/kubeup/internal/staticpods"
)

func main() {
	netns := flag.String("netns", "", "the node's network namespace (ip netns)")
	root := flag.String("root", "", "the node's filesystem root")
	manifests := flag.String("manifests", "/etc/kubernetes/manifests", "the manifest directory, under --root")
	only := flag.String("only", "*", "run only the manifests whose file name matches this glob")
	skip := flag.String("skip", "", "do not run the manifests whose file name matches this glob (such as kube-proxy*, whose binary the host has not)")
	logDir := flag.String("log-dir", "", "where each pod's log, process id file and root filesystem mount point go")
	binaries := map[string]string{}
	flag.Func("binary", "the host file to run for a container's command, as `COMMAND=FILE` (COMMAND an absolute path, as the manifest names it); repeatable",
		func(v string) error {
			cmd, file, ok := strings.Cut(v, "=")
			if !ok || !filepath.IsAbs(cmd) || file == "" {
				return fmt.Errorf("want COMMAND=FILE, COMMAND an absolute path such as /usr/local/bin/kube-apiserver")
			}
			if _, dup := binaries[cmd]; dup {
				return fmt.Errorf("%s is given twice", cmd)
			}
			st, err := os.Stat(file)
			if err != nil {
				return err
			}
			if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
				return fmt.Errorf("%s is not an executable file", file)
			}
			abs, err := filepath.Abs(file)
			if err != nil {
				return err
			}
			binaries[cmd] = abs
			return nil
		})
	kubeconfig := flag.String("kubeconfig", "", "also stand in for kubelet's API half with this kubeconfig's (admin) credentials: register the node, renew its status, post mirror pods")
	nodeName := flag.String("node-name", "", "with --kubeconfig: the Node's name")
	nodeIP := flag.String("node-ip", "", "with --kubeconfig: the Node's InternalIP")
	var apiAddresses []string
	flag.Func("api-address", "with --kubeconfig: a `HOST[:PORT]` to reach the API at instead of the kubeconfig's server name (kept for TLS); repeatable: the next is tried after a failed round",
		func(v string) error { apiAddresses = append(apiAddresses, v); return nil })
	flag.Parse()
	if *netns == "" || *root == "" || *logDir == "" || flag.NArg() != 0 || (*kubeconfig != "") != (*nodeName != "" && *nodeIP != "") {
		fmt.Fprintln(os.Stderr, "usage: staticpods --netns NAME --root DIR --log-dir DIR [--manifests DIR] [--only GLOB] [--skip GLOB] [--binary COMMAND=FILE ...] [--kubeconfig FILE --node-name NAME --node-ip IP [--api-address HOST[:PORT]]]")
		os.Exit(2)
	}
	for flagName, glob := range map[string]string{"--only": *only, "--skip": *skip} {
		if _, err := filepath.Match(glob, ""); err != nil {
			fmt.Fprintf(os.Stderr, "staticpods: %s %q: %v\n", flagName, glob, err)
			os.Exit(2)
		}
	}
	for _, tool := range staticpods.Tools {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "staticpods: %s is not installed\n", tool)
			os.Exit(1)
		}
	}
	if err := os.MkdirAll(*logDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "staticpods:", err)
		os.Exit(1)
	}
	r := staticpods.Start(staticpods.Config{
		NetNS: *netns, Root: *root, ManifestDir: *manifests, LogDir: *logDir, Binaries: binaries,
		Only: func(name string) bool {
			ok, _ := filepath.Match(*only, name)
			skipped, _ := filepath.Match(*skip, name)
			return ok && !skipped
		},
		Start: func(cmd *exec.Cmd, logFile string) (staticpods.Process, error) {
			p, err := staticpods.StartProcess(cmd, logFile)
			if err != nil {
				return nil, err
			}
			pidFile := strings.TrimSuffix(logFile, ".log") + ".pid"
			os.WriteFile(pidFile, []byte(strconv.Itoa(p.PID())+" "+startTime(p.PID())+"\n"), 0o644)
			go func() { <-p.Done(); os.Remove(pidFile) }()
			return p, nil
		},
	})
	what := *only
	if *skip != "" {
		what += " but " + *skip
	}
	fmt.Printf("staticpods: running %s in %s%s for network namespace %s\n", what, *root, *manifests, *netns)
	if *kubeconfig != "" {
		api, err := staticpods.StartKubeletAPI(staticpods.KubeletAPIConfig{
			NodeName: *nodeName, Address: *nodeIP, Root: *root, Kubeconfig: *kubeconfig, ServerAddresses: apiAddresses,
			Pods: r.Pods, Log: slog.New(slog.NewTextHandler(os.Stdout, nil)),
		})
		if err != nil {
			r.Stop()
			fmt.Fprintln(os.Stderr, "staticpods:", err)
			os.Exit(1)
		}
		defer api.Stop()
		fmt.Printf("staticpods: standing in for kubelet's API half too: node %s (%s), with the credentials of %s\n", *nodeName, *nodeIP, *kubeconfig)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	last := ""
	for {
		select {
		case s := <-sig:
			fmt.Printf("staticpods: %v: stopping the pods\n", s)
			r.Stop()
			return
		case <-tick.C:
			var b strings.Builder
			for _, p := range r.Pods() {
				fmt.Fprintf(&b, " %s(pid %d, %d starts)", p.Manifest, p.PID, p.Starts)
			}
			if b.String() != last {
				fmt.Printf("staticpods: pods:%s\n", b.String())
				last = b.String()
			}
		}
	}
}

// startTime is the process's start time, in clock ticks since boot (field 22 of /proc/PID/stat); "" if unknown.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
