#!/usr/bin/env bash
# make demo: the main job of kubeup on this machine, as root, on the local provider and a file:// state store: a
# cluster of 3 control-plane nodes, each a machine of its own (Debian 12 booted with systemd in systemd-nspawn, in
# a network namespace on a bridge: hack/machine.sh). nodeup converges each machine; protokube.service there claims
# and mounts one etcd volume per etcd cluster, writes etcd's manifests, publishes DNS to a BIND the demo starts
# and keeps kubelet running; kubelet runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kube-proxy in containers (containerd, runc) from the images `make images` built, preloaded on the node. etcd ends
# healthy through its DNS names, over TLS with the certificates kubeup issued; kubectl answers through
# api.<cluster> with the kubeconfig of `kubeup export kubeconfig`; the kubelets register their Nodes, Ready; kubeup
# update cluster applies the addons (CoreDNS) through the API; each node routes the other nodes' pod ranges; a
# Deployment of the e2e workload runs on the pod network behind a ClusterIP Service, `kubectl logs` and `kubectl exec`
# reach one of its pods, and from the pod on node1 the Service answers by its DNS name from the pods on the others. `kubeup validate
# cluster` passes, fails naming the members of a node whose etcd is stopped and the node whose kubelet (then
# containerd) is stopped, and passes again once protokube brings them back. Day two: a change of the spec reaches
# the machines through `kubeup rolling-update cluster`, which runs each node's nodeup again, one at a time,
# checking etcd's quorum first.
# Narration goes to stderr, the programs' own output to stdout. Every step must succeed: the script stops at the
# first failure, and checks what each step promised. Everything it makes is recorded for hack/demo-clean.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/demo-env.sh
. hack/machine.sh

BIN=${BIN:-bin}
export KUBEUP_STATE_STORE="file://$STATE"

run() { printf '$ %s\n' "$*" >&2; "$@"; }
kubeup() { printf '$ kubeup %s\n' "$*" >&2; "$BIN/kubeup" "$@"; }

# background NAME CMD...: start CMD in a session of its own, its output in DEMO_DIR/logs/NAME.log, and record
# its process id and start time in MADE/pids/NAME.pid. setsid does not fork here (the script's children are not
# process group leaders), so $! is the program's own id.
background() {
	local name=$1 pid
	shift
	mkdir -p "$DEMO_DIR/logs" "$MADE/pids"
	setsid "$@" >"$DEMO_DIR/logs/$name.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid $(start_time "$pid")" >"$MADE/pids/$name.pid"
}

# wait_for SECONDS WHAT CMD...: run CMD every second until it succeeds; fail after SECONDS.
wait_for() {
	local limit=$1 what=$2 deadline=$((SECONDS + $1))
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || fail "waited ${limit}s for $what"
		sleep 1
	done
}

# assets_from DIR: the files of this machine's builds that the nodes install, named and packed as upstream
# publishes them, for `kubeup assets mirror --from` (no release server is reachable here): kubelet (make
# kube-binaries), protokube (make build), containerd's and crictl's release archives, runc, the CNI plugins'
# archive (make runtime-binaries) and the images' archives (make images).
assets_from() {
	local d=$1 v
	v() { awk -v c="$1" '$1 == c { sub(/^v/, "", $2); print $2 }' "$RUNTIME_BIN/VERSIONS"; }
	mkdir -p "$d/pack/bin"
	cp "$KUBE_BIN/kubelet" "$BIN/protokube" "$d/"
	cp "$RUNTIME_BIN/runc" "$d/runc.amd64"
	cp "$RUNTIME_BIN/containerd" "$RUNTIME_BIN/containerd-shim-runc-v2" "$RUNTIME_BIN/ctr" "$d/pack/bin/"
	tar -C "$d/pack" -czf "$d/containerd-$(v containerd)-linux-amd64.tar.gz" bin
	tar -C "$RUNTIME_BIN/cni" -czf "$d/cni-plugins-linux-amd64-v$(v cni-plugins).tgz" .
	tar -C "$RUNTIME_BIN" -czf "$d/crictl-v$(v crictl)-linux-amd64.tar.gz" crictl
	rm -r "$d/pack"
	cp "$IMAGES"/*.tar "$d/"
}

# demo_dropins NODE: the demo's own setting of a node: protokube's rounds every 2s (a drop-in of
# protokube.service) rather than every minute.
demo_dropins() {
	local root
	root=$(machine_root "$1")
	mkdir -p "$root/etc/systemd/system/protokube.service.d"
	printf '[Service]\nExecStart=\nExecStart=/usr/local/bin/protokube --conf=/etc/kubeup/node.conf --interval=2s\n' >"$root/etc/systemd/system/protokube.service.d/10-demo.conf"
}

[ "$(id -u)" = 0 ] || fail "make demo runs as root: it creates network namespaces, loop devices and mounts"
for tool in ip nsenter setsid named dig etcd etcdctl losetup mkfs.ext4 blkid unshare systemd-nspawn; do
	command -v "$tool" >/dev/null || fail "$tool is not installed (make e2e-packages installs it)"
done

for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
	[ -x "$KUBE_BIN/$c" ] || fail "$KUBE_BIN/$c is missing: make kube-binaries builds it (make demo does)"
done
[ -e "$RUNTIME_BIN/VERSIONS" ] || fail "the container runtime is missing in $RUNTIME_BIN: make runtime-binaries builds it (make demo does)"
[ -e "$IMAGES/IMAGES" ] || fail "the images are missing in $IMAGES: make images builds them (make demo does)"
[ -x "$KUBECTL" ] || fail "$KUBECTL is missing: make kubectl unpacks Debian's (make demo does)"

if [ -e "$DEMO_DIR" ]; then
	say "Clean what an earlier demo left in $DEMO_DIR (make demo-clean)"
	bash hack/demo-clean.sh
fi
mkdir -p "$DEMO_DIR"

say "The machines: a bridge $BRIDGE ($GATEWAY/24) and one network namespace per control-plane node"
if ip -o addr show | grep -qF " $DEMO_NET."; then
	fail "an interface of this machine already has an address in $DEMO_NET.0/24: choose another with DEMO_NET=10.x.y"
fi
record links "$BRIDGE"
run ip link add "$BRIDGE" type bridge
ip addr add "$GATEWAY/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
if [ ! -d /etc/netns ]; then record emptydirs /etc/netns; fi
for n in "${NODES[@]}"; do
	ns=$(netns_of "$n") veth="$BRIDGE-v${n#node}"
	record netns "$ns"
	run ip netns add "$ns"
	record links "$veth"
	ip link add "$veth" type veth peer name eth0 netns "$ns"
	ip link set "$veth" master "$BRIDGE"
	ip link set "$veth" up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$(ip_of "$n")/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via "$GATEWAY"
	# What programs started by `ip netns exec` see as /etc/resolv.conf: the demo's BIND.
	mkdir -p "/etc/netns/$ns"
	printf 'nameserver %s\noptions timeout:1 attempts:2\n' "$GATEWAY" >"/etc/netns/$ns/resolv.conf"
	echo "  $n: network namespace $ns, address $(ip_of "$n"), resolver $GATEWAY" >&2
done

say "DNS: BIND on $GATEWAY:53, primary of $DNS_ZONE, which takes dynamic updates (RFC 2136) signed with a TSIG key"
# Debian's AppArmor profile for named, when enforced, allows /var/lib/bind but not /tmp.
bind_dir=$DEMO_DIR/bind
if grep -qE '^(/usr/sbin/)?named \(enforce\)' /sys/kernel/security/apparmor/profiles 2>/dev/null; then
	bind_dir=/var/lib/bind/kubeup-demo
	record dirs "$bind_dir"
fi
mkdir -p "$bind_dir"
secret=$(head -c 32 /dev/urandom | base64)
cat >"$bind_dir/named.conf" <<CONF
# Written by kubeup's make demo (hack/demo.sh).
options {
	directory "$bind_dir";
	pid-file none;
	session-keyfile "$bind_dir/session.key";
	managed-keys-directory "$bind_dir";
	listen-on port 53 { $GATEWAY; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { any; };
	allow-transfer { none; };
};
controls { };
key "kubeup-demo" {
	algorithm hmac-sha256;
	secret "$secret";
};
zone "$DNS_ZONE" {
	type primary;
	file "$bind_dir/$DNS_ZONE.zone";
	update-policy { grant kubeup-demo zonesub ANY; };
	allow-transfer { key kubeup-demo; };
};
CONF
cat >"$bind_dir/$DNS_ZONE.zone" <<ZONE
\$ORIGIN $DNS_ZONE.
\$TTL 300
@	IN SOA ns.$DNS_ZONE. hostmaster.$DNS_ZONE. 1 3600 600 604800 60
@	IN NS ns.$DNS_ZONE.
ns	IN A $GATEWAY
ZONE
background named named -g -n 1 -c "$bind_dir/named.conf"
wait_for 30 "named to serve $DNS_ZONE" dig +tcp +short +time=1 +tries=1 "@$GATEWAY" "$DNS_ZONE" SOA
run dig +short "@$GATEWAY" "$DNS_ZONE" SOA

say "A new cluster: 3 control-plane nodes in zone a, kept in $KUBEUP_STATE_STORE, its DNS records in that BIND"
# The machines' kubelets and containerd manage cgroups themselves (cgroupfs) on a cgroup v1 host, where the
# machines' systemd has no controller but its own; with the unified hierarchy, through systemd.
CGROUP_DRIVER=cgroupfs
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then CGROUP_DRIVER=systemd; fi
# A machine without CAP_SYS_RESOURCE (this VM's) cannot give a pod sandbox the negative oom_score_adj kubelet asks
# for: containerd clamps it (spec.containerd.restrictOOMScoreAdj).
RESTRICT_OOM=false
if (( ((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)) >> 24 & 1) == 0 )); then RESTRICT_OOM=true; fi
# kube-proxy leaves the conntrack table's size alone (spec.kubeProxy.conntrackMaxPerCore 0): the machines share this
# host's kernel, whose nf_conntrack_max is global, and demo-clean would not put it back.
spec=$(kubeup create cluster --name "$NAME" --cloud local --zones a --control-plane-count 3 --node-count 0 --dry-run -o yaml)
grep -q '^  cloudProvider: local$' <<<"$spec" || fail "unexpected spec: $spec"
dns="  cloudProvider: local
  local:
    dns:
      provider: rfc2136
      server: $GATEWAY:53
      tsigKeyName: kubeup-demo
      tsigAlgorithm: hmac-sha256
      tsigSecretFile: $SECRET_AT
  kubelet:
    cgroupDriver: $CGROUP_DRIVER
  containerd:
    restrictOOMScoreAdj: $RESTRICT_OOM
  kubeProxy:
    conntrackMaxPerCore: 0"
awk -v dns="$dns" '$0 == "  cloudProvider: local" { print dns; next } { print }' <<<"$spec" >"$DEMO_DIR/spec.yaml"
kubeup create cluster --name "$NAME" --cloud local --zones a --control-plane-count 3 --node-count 0
kubeup replace -f "$DEMO_DIR/spec.yaml"
echo "spec.local.dns, as replace stored it:" >&2
"$BIN/kubeup" get cluster "$NAME" -o yaml | grep -A6 '^  local:'
kubeup get instancegroups --name "$NAME"

say "The assets the nodes install (kubelet, containerd, runc, the CNI plugins, crictl, protokube, the images they preload), mirrored into the state store with their sha256 (no release server is reachable here: from this machine's builds)"
assets_from "$DEMO_DIR/assets"
kubeup assets mirror "$NAME" --from "$DEMO_DIR/assets" | tail -3
kubeup assets mirror "$NAME" --from "$DEMO_DIR/assets" --yes | tail -1
kubeup assets mirror "$NAME" --from "$DEMO_DIR/assets" >"$DEMO_DIR/mirror-again.txt"
grep -q 'no changes$' "$DEMO_DIR/mirror-again.txt" || fail "a second mirror has changes: $(cat "$DEMO_DIR/mirror-again.txt")"
echo "(mirroring again: no changes)" >&2
echo "spec.assets, as the mirror recorded them:" >&2
"$BIN/kubeup" get cluster "$NAME" -o yaml | awk '/^  assets:/ { on = 1; print; next } on && /^  [a-z]/ { on = 0 } on' | grep -vE '^ *(url|image):' | head -40

say "Dry run: what update would do (the report is long; its summary)"
plan=$(kubeup update cluster "$NAME")
grep -E '^(Will|  [A-Za-z]+/)' <<<"$plan"
tail -1 <<<"$plan"
[ "$(grep -c '^  LocalVolume/' <<<"$plan")" = 6 ] || fail "the dry run should list 6 volumes"
[ ! -e "$POOL" ] || fail "the dry run created something"

say "Apply it: the volumes (sparse images in the pool), the nodes' configurations, placeholder DNS records"
kubeup update cluster "$NAME" --yes | tail -1
ls -ls "$POOL"/*.img >&2
kubeup update cluster "$NAME" >"$DEMO_DIR/second.txt"
grep -q 'No changes need to be applied' "$DEMO_DIR/second.txt" || fail "the second update found changes"
echo "(applying again: no changes)" >&2

say "The cluster admin's kubeconfig (kubeup export kubeconfig), for kubectl and kubeup validate"
KUBECONFIG=$KUBECONFIG_FILE kubeup export kubeconfig "$NAME"

say "The machines: each node is Debian 12 booted with systemd in systemd-nspawn, in its network namespace (hack/machine.sh)"
for n in "${NODES[@]}"; do
	boot_machine "$n"
	echo "  $n: machine $n, systemd pid $(machine_pid "$n") ($(in_machine "$n" systemctl is-system-running || true)), address $(ip_of "$n")" >&2
done

say "nodeup on each node, from this host through the machine's root (/proc/PID/root) and its systemd's socket: files, units, containerd, the preloaded images; protokube.service started"
for n in "${NODES[@]}"; do
	root=$(machine_root "$n")
	mkdir -p "$root$(dirname "$SECRET_AT")"
	(umask 077 && echo "$secret" >"$root$SECRET_AT") # the TSIG secret, as a cloud's secret store would place it
	demo_dropins "$n"
	run "$BIN/nodeup" --conf="$STATE/$NAME/nodeup/control-plane-a-${n#node}" --root="$root" --node-id="$n" >"$DEMO_DIR/logs/nodeup-$n.out" 2>"$DEMO_DIR/logs/nodeup-$n.log" ||
		{ tail -20 "$DEMO_DIR/logs/nodeup-$n.log" >&2; fail "nodeup failed on $n (log: $DEMO_DIR/logs/nodeup-$n.log)"; }
	echo "  $n: $(grep -c '^  created' "$DEMO_DIR/logs/nodeup-$n.out") files and units created (report: $DEMO_DIR/logs/nodeup-$n.out); protokube.service $(in_machine "$n" systemctl is-active protokube.service || true)" >&2
done
echo "the machines nodeup recorded (<pool>/../machines/<cluster>/<node id>.json):" >&2
ls "$MACHINES" | sed 's/^/  /' >&2
[ "$(ls "$MACHINES" | wc -l)" = 3 ] || fail "nodeup should have recorded 3 machines in $MACHINES"
echo "node1's /etc/kubernetes, /etc/kubeup and units:" >&2
(cd "$(machine_root node1)" && find etc/kubernetes etc/kubeup etc/systemd/system -maxdepth 1 -type f | sort | sed 's/^/  /') >&2

say "protokube on each node (protokube.service, every 2s): claim a volume per etcd cluster, attach, format if blank, mount, write etcd's manifest, publish DNS, keep kubelet running"
held() { [ "$(find "$POOL" -name '*.claim' | wc -l)" = 6 ]; }
wait_for 120 "the 6 volumes to be claimed" held
echo "claims (<pool>/<volume>.claim):" >&2
field() { sed -n "s/^ *\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$2"; }
for c in "$POOL"/*.claim; do
	printf '  %-34s held by %s (%s), attached at %s\n' "$(basename "$c" .claim)" "$(field nodeID "$c")" "$(field internalIP "$c")" "$(field device "$c")"
done
manifests() { for n in "${NODES[@]}"; do ls "$(machine_root "$n")"/etc/kubernetes/manifests/etcd-main.manifest || return 1; done; }
wait_for 120 "an etcd-main manifest on each node" manifests
echo "the etcd volumes mounted in each machine:" >&2
for n in "${NODES[@]}"; do in_machine "$n" findmnt -rn -o SOURCE,TARGET | awk -v n="$n" '$1 ~ /^\/dev\/loop/ { print "  " n ": " $0 }'; done

echo "DNS records protokube published (a zone transfer, signed with the TSIG key):" >&2
records() { dig +noall +answer -y "hmac-sha256:kubeup-demo:$secret" "@$GATEWAY" "$DNS_ZONE" AXFR | awk '$4 == "A" && $1 ~ /internal|^api/'; }
published() { [ "$(records | awk '$1 ~ /[.]etcd-/' | sort -u | wc -l)" = 6 ]; } # 6 members, each on its node
wait_for 60 "the members' DNS names" published
records | sort -u | sed 's/^/  /'
echo "(api.$NAME: $(api_addresses | paste -sd' ' | grep . || echo 'no address'). A node's address goes there only once its own kube-apiserver answers /readyz)" >&2

say "etcd, run by kubelet in containers from the manifests protokube wrote, healthy through its members' DNS names (TLS, client certificates)"
deadline=$((SECONDS + 180))
while :; do
	if DEMO_STATUS_ETCD_ONLY=1 bash hack/demo-status.sh >"$DEMO_DIR/status.txt" 2>&1; then break; fi
	if ((SECONDS >= deadline)); then
		cat "$DEMO_DIR/status.txt" >&2
		fail "waited 180s for etcd to be healthy (in_machine NODE crictl ps -a; journalctl -u kubelet)"
	fi
	sleep 1
done
sed '/^volumes:/,$d' "$DEMO_DIR/status.txt" # every etcd cluster's section, however many lines etcdctl printed

say "The API: kube-apiserver, kube-controller-manager and kube-scheduler, run by kubelet in containers from the manifests nodeup wrote, with the certificates kubeup issued"
echo "the certificates and keys on node1 (written by protokube from the node configuration; keys 0600):" >&2
(cd "$(machine_root node1)" && find srv/kubernetes var/lib/kube-* -type f -printf '  %m %p\n' | sort -k2) >&2
kubectl() { printf '$ kubectl %s   (in node1'"'"'s network namespace: its resolver is the BIND)\n' "$*" >&2; ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=10s "$@"; }
# every_api_ready: api.<cluster> holds the 3 nodes' addresses (each node's protokube adds its own once its
# kube-apiserver answers /readyz), and each answers /readyz here too: kubectl, whichever address the name gives
# it, reaches a ready kube-apiserver.
every_api_ready() {
	local ips ip
	ips=$(api_addresses)
	[ "$ips" = "$(for n in "${NODES[@]}"; do ip_of "$n"; done | sort)" ] || return 1
	for ip in $ips; do [ "$(readyz_at "$ip")" = ok ] || return 1; done
}
wait_for 300 "kube-apiserver to be ready on the 3 nodes, and api.$NAME to hold their 3 addresses, each answering /readyz" every_api_ready
echo "api.$NAME, each address's GET /readyz:" >&2
for ip in $(api_addresses); do echo "  $ip: $(readyz_at "$ip")"; done
kubectl get --raw /readyz
echo # /readyz answers "ok" without a newline
kubectl get namespaces
kubectl get lease -n kube-system

say "kubeup validate cluster: each instance group's nodes Ready, each control-plane node's static pods, every etcd member healthy, DNS"
# In node1's network namespace, as kubectl: validate resolves the API's and the members' names through the BIND.
validate() {
	printf '$ kubeup validate cluster %s %s   (in node1'"'"'s network namespace)\n' "$NAME" "$*" >&2
	ip netns exec "$(netns_of node1)" "$BIN/kubeup" validate cluster "$NAME" --kubeconfig="$KUBECONFIG_FILE" "$@"
}
validate --wait 3m || fail "validate cluster did not pass in 3m (each node's kubelet: hack/machine.sh's in_machine NODE journalctl -u kubelet)"
kubectl get nodes -L kubeup.dev/instancegroup

say "The workload's image, which no registry here serves and no spec names: imported into each node's containerd by hand, as an operator would"
for n in "${NODES[@]}"; do
	printf '$ ctr -n k8s.io images import - <%s   (in %s)\n' "$IMAGES/hello.tar" "$n" >&2
	in_machine "$n" ctr -n k8s.io images import - <"$IMAGES/hello.tar" >/dev/null 2>&1 || fail "importing the workload's image on $n"
done

say "The cluster's addons (CoreDNS), applied through the API by kubeup update cluster once it answers: a dry run shows them, --yes applies them, a second dry run has no change"
# From node1's network namespace, whose resolver is the BIND: update reaches the API through api.<cluster>.
update_in_node1() {
	printf '$ kubeup update cluster %s %s   (in node1'"'"'s network namespace)\n' "$NAME" "$*" >&2
	ip netns exec "$(netns_of node1)" "$BIN/kubeup" update cluster "$NAME" --kubeconfig="$KUBECONFIG_FILE" "$@"
}
update_in_node1 | grep -E '^(Will|  [A-Za-z]+/)|Addon|KubeObject' || true
update_in_node1 --yes | tail -1
update_in_node1 >"$DEMO_DIR/addons-again.txt"
grep -q 'No changes' "$DEMO_DIR/addons-again.txt" || fail "a second update after the addons found changes: $(cat "$DEMO_DIR/addons-again.txt")"
echo "(applying again: no changes)" >&2
coredns_ready() { [ "$(ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=5s -n kube-system get deployment coredns -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = 2 ]; }
wait_for 180 "CoreDNS's 2 replicas to be ready" coredns_ready
kubectl -n kube-system get deployment,service -l kubeup.dev/addon=coredns

say "The pod network: each node routes the other nodes' pod ranges (kube-controller-manager allocates them; protokube keeps the routes, protocol 111)"
kubectl get nodes -o 'custom-columns=NAME:.metadata.name,POD RANGE:.spec.podCIDR,ADDRESS:.status.addresses[?(@.type=="InternalIP")].address'
routed() { for n in "${NODES[@]}"; do [ "$(ip -n "$(netns_of "$n")" route show proto 111 | wc -l)" = $((${#NODES[@]} - 1)) ] || return 1; done; }
wait_for 60 "each node to route the other nodes' pod ranges" routed
for n in "${NODES[@]}"; do ip -n "$(netns_of "$n")" route show proto 111 | sed "s/^/  $n: /"; done

say "A workload: a Deployment of 3 replicas of the e2e workload on the pod network, one per node, the control plane's taint tolerated, behind the ClusterIP Service hello"
printf '$ kubectl apply -f hack/hello-deployment.yaml   (in node1'"'"'s network namespace)\n' >&2
ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=10s apply -f - <hack/hello-deployment.yaml
hello_ready() { [ "$(ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=5s get deployment hello -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = 3 ]; }
wait_for 180 "the 3 pods of the Deployment to be ready" hello_ready
kubectl get pods -l app=hello -o wide
kubectl get service hello
pod=$(ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" get pods -l app=hello --field-selector spec.nodeName=node1 -o jsonpath='{.items[0].metadata.name}')
kubectl logs "$pod"
kubectl exec "$pod" -- /hello get http://127.0.0.1:18080/

say "The Service by its name, from the pod on node1: answered by the pods on the other nodes (CoreDNS, kube-proxy, the routes between nodes)"
others=$(ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" get pods -l app=hello -o jsonpath='{range .items[?(@.spec.nodeName!="node1")]}{.metadata.name}{"\n"}{end}')
[ "$(wc -l <<<"$others")" = 2 ] || fail "want 2 hello pods on the other nodes, found: $others"
: >"$DEMO_DIR/answers.txt"
answered_by_others() {
	ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=10s exec "$pod" -- /hello get http://hello.default.svc.cluster.local/ >>"$DEMO_DIR/answers.txt" 2>/dev/null || return 1
	local o
	for o in $others; do grep -qx "hello from $o" "$DEMO_DIR/answers.txt" || return 1; done
}
wait_for 120 "both pods on the other nodes to answer http://hello.default.svc.cluster.local/ from $pod" answered_by_others
printf '$ kubectl exec %s -- /hello get http://hello.default.svc.cluster.local/   (answers, in turn)\n' "$pod" >&2
sort -u "$DEMO_DIR/answers.txt" | sed 's/^/  /'

kubelet_victim=node2
names_victim() {
	local out
	out=$(ip netns exec "$(netns_of node1)" "$BIN/kubeup" validate cluster "$NAME" --kubeconfig="$KUBECONFIG_FILE" 2>&1) && return 1
	grep -q "^Node $kubelet_victim: " <<<"$out"
}
# kubelet.service, then containerd.service (whose stop stops kubelet, which requires it).
for unit in kubelet containerd; do
	say "$kubelet_victim's $unit stopped (and its protokube, which would start it again within a round): validate exits 1, naming $kubelet_victim"
	# protokube first, and alone: a round it is in may start the unit, and that job would cancel a stop of both at once.
	run in_machine "$kubelet_victim" systemctl stop protokube.service
	run in_machine "$kubelet_victim" systemctl stop "$unit.service"
	wait_for 180 "validate to name $kubelet_victim (its Node turns NotReady once the controller-manager misses its kubelet)" names_victim
	set +e
	out=$(validate)
	set -e
	grep "^Node $kubelet_victim: " <<<"$out"
	say "$kubelet_victim's protokube started again: its round starts $unit (and kubelet), validate passes again"
	run in_machine "$kubelet_victim" systemctl start protokube.service
	validate --wait 6m || fail "validate cluster did not pass in 6m after $kubelet_victim's protokube came back"
done

victim=node3
say "$victim's etcd stopped (its protokube stopped, etcd's manifests removed): validate exits 1, naming $victim's members"
run in_machine "$victim" systemctl stop protokube.service # it ends between rounds, its claims and mounts stay
run rm "$(machine_root "$victim")"/etc/kubernetes/manifests/etcd-main.manifest "$(machine_root "$victim")"/etc/kubernetes/manifests/etcd-events.manifest
etcd_gone() { [ -z "$(in_machine "$victim" crictl ps -q --label io.kubernetes.pod.namespace=kube-system --name '^etcd$' 2>/dev/null)" ]; }
wait_for 60 "kubelet to stop etcd's containers on $victim" etcd_gone
# $victim's kube-apiserver, whose etcd is its own node's, is no longer ready, and its protokube is not there to
# withdraw its address: its claims lapse unrenewed (--lease, 5 × --interval), and the other nodes' protokube then
# remove its address from the API's names.
api_without_victim() { ! grep -qxF "$(ip_of "$victim")" <<<"$(api_addresses)"; }
wait_for 60 "api.$NAME to drop $victim's address once its claims lapse" api_without_victim
echo "api.$NAME: $(api_addresses | paste -sd' ')" >&2
# $victim's kubelet reaches the API through its own kube-apiserver (127.0.0.1), which has no etcd now: it can
# neither delete etcd's mirror pods nor post its status, so what validate says of $victim's Node and pods follows
# the controller-manager (NotReady after its grace period); the members it names are what matters here.
set +e
out=$(validate)
code=$?
set -e
echo "$out"
[ "$code" = 1 ] || fail "validate cluster with $victim's etcd stopped exited $code, want 1"
for ec in main events; do
	member=$(sed -n "s|^EtcdMember $ec/\([A-Za-z0-9-]*\): .*|\1|p" <<<"$out")
	[ "$(wc -w <<<"$member")" = 1 ] || fail "validate should name one member of etcd-$ec, it names: $member"
	addr=$(dig +short "@$GATEWAY" "$member.etcd-$ec.internal.$NAME" A)
	[ "$addr" = "$(ip_of "$victim")" ] || fail "validate names member $member of etcd-$ec, whose name points at $addr, not at $victim"
	echo "  validate names member $member of etcd-$ec: $member.etcd-$ec.internal.$NAME is $addr, $victim's address" >&2
done

say "$victim's protokube started again: it writes etcd's manifests back, etcd rejoins, validate passes again"
run in_machine "$victim" systemctl start protokube.service
# kube-apiserver on $victim failed while its etcd was away: kubelet's back-off may hold it for up to 5 minutes.
validate --wait 6m || fail "validate cluster did not pass in 6m after $victim's etcd came back"

say "make demo-status: etcd, the API, the volumes"
bash hack/demo-status.sh

say "Day two: a change of the spec, rolled out to the machines one at a time (kubeup rolling-update cluster)"
kubeup rolling-update cluster "$NAME"
"$BIN/kubeup" get cluster "$NAME" -o yaml >"$DEMO_DIR/spec-day2.yaml"
grep -qx '  kubelet:' "$DEMO_DIR/spec-day2.yaml" || fail "the spec has no spec.kubelet: $(cat "$DEMO_DIR/spec-day2.yaml")"
sed -i 's/^  kubelet:$/&\n    maxPods: 80/' "$DEMO_DIR/spec-day2.yaml"
echo "spec.kubelet.maxPods: 80 (every group's node configuration changes)" >&2
kubeup replace -f "$DEMO_DIR/spec-day2.yaml"
kubeup update cluster "$NAME" --yes | tail -1
listed=$(kubeup rolling-update cluster "$NAME")
echo "$listed"
[ "$(grep -c ' NeedsUpdate  *true  *node configuration ' <<<"$listed")" = 3 ] || fail "rolling-update should list the 3 machines as NeedsUpdate"
# The checks are validate's, through the API and etcd: from node1's network namespace, whose resolver is the BIND.
printf '$ kubeup rolling-update cluster %s --yes --interval 1s   (in node1'"'"'s network namespace)\n' "$NAME" >&2
ip netns exec "$(netns_of node1)" "$BIN/kubeup" rolling-update cluster "$NAME" --kubeconfig="$KUBECONFIG_FILE" --yes --interval 1s \
	2>"$DEMO_DIR/logs/rolling-update.log" || { tail -20 "$DEMO_DIR/logs/rolling-update.log" >&2; fail "rolling-update failed (log: $DEMO_DIR/logs/rolling-update.log)"; }
echo "its log, for each machine: the checks before, the wait after:" >&2
grep -E 'msg="(etcd quorum check|the cluster validates: replacing the machine|the replacement is ready and the cluster healthy)"' \
	"$DEMO_DIR/logs/rolling-update.log" | sed 's/^time=[^ ]* level=[A-Z]* /  /' >&2
[ "$(grep -c 'msg="the cluster validates: replacing the machine"' "$DEMO_DIR/logs/rolling-update.log")" = 3 ] ||
	fail "rolling-update should have validated the cluster before each of the 3 machines"
for n in "${NODES[@]}"; do
	grep -q -- '--max-pods=80' "$(machine_root "$n")/etc/default/kubelet" || fail "$n's kubelet flags do not have --max-pods=80 after the rolling update"
done
kubeup rolling-update cluster "$NAME" | grep 'No machine' || fail "a second rolling-update has something to do"
# Each kubelet, restarted by its protokube when its flags changed, reports --max-pods as its Node's pod capacity.
capacity() { ip netns exec "$(netns_of node1)" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=5s get nodes -o jsonpath='{.items[*].status.capacity.pods}'; }
at80() { [ "$(capacity)" = "80 80 80" ]; }
wait_for 30 "the Nodes to report a capacity of 80 pods" at80
kubectl get nodes -o 'custom-columns=NAME:.metadata.name,PODS:.status.capacity.pods,INSTANCEGROUP:.metadata.labels.kubeup\.dev/instancegroup'
bash hack/demo-status.sh >"$DEMO_DIR/status.txt" 2>&1 || { cat "$DEMO_DIR/status.txt" >&2; fail "the cluster is not healthy after the rolling update"; }
echo "(make demo-status: healthy after the rolling update)" >&2

say "A converged node's dry run: protokube --once --dryrun on node1 has nothing to do"
printf '$ protokube --conf=/etc/kubeup/node.conf --once --dryrun   (in node1)\n' >&2
dry=$(in_machine node1 /usr/local/bin/protokube --conf=/etc/kubeup/node.conf --once --dryrun 2>&1)
grep -v '^time=' <<<"$dry"
grep -q 'No changes need to be applied' <<<"$dry" || fail "node1's dry run found changes: $dry"

say "Done. The cluster runs in $DEMO_DIR: make demo-status checks it again, make demo-clean removes everything"
