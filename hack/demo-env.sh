# Sourced by hack/demo.sh, hack/demo-status.sh and hack/demo-clean.sh: the names the demo uses, and the record of
# what it made. Everything the demo creates outside DEMO_DIR is written down under DEMO_DIR/made before it is
# created, so that demo-clean removes exactly that (never by name patterns).
DEMO_DIR=${DEMO_DIR:-/tmp/kubeup-demo}
NAME=demo.example.com
DNS_ZONE=example.com
NODES=(node1 node2 node3)
DEMO_NET=${DEMO_NET:-10.232.0}    # the bridge's /24: the host is .1, node i is .(i+1)
BRIDGE=kubeup-demo
GATEWAY=$DEMO_NET.1
MADE=$DEMO_DIR/made               # netns, links, dirs: one name a line; pids/: "PID START" of each process started
STATE=$DEMO_DIR/state
DEMO_SYSCTLS=/run/kubeup-demo.sysctls  # a link to MADE/sysctls while the demo holds kubelet's kernel settings
POOL=$DEMO_DIR/state-local/volumes
MACHINES=$DEMO_DIR/state-local/machines/$NAME # what nodeup records of each node, for kubeup rolling-update
SECRET_AT=/etc/kubeup/tsig.secret # on each node, under its root
KUBECONFIG_FILE=$DEMO_DIR/kubeconfig # what kubeup export kubeconfig writes (KUBECONFIG)
KUBE_BIN=${KUBEUP_KUBE_BIN:-/var/cache/kubeup/bin/v1.34.2} # make kube-binaries: kube-apiserver, -controller-manager, -scheduler
KUBECTL=${KUBEUP_KUBECTL:-/var/cache/kubeup/kubernetes-client/usr/bin/kubectl} # make kubectl: Debian's
# make runtime-binaries: containerd, runc, crictl, the CNI plugins; make images: the images the nodes preload.
# The Makefile exports both; run by hand, the one complete cache of each.
RUNTIME_BIN=${KUBEUP_RUNTIME_BIN:-$(dirname "$(ls /var/cache/kubeup/runtime/*/VERSIONS 2>/dev/null | head -1)")}
IMAGES=${KUBEUP_IMAGES:-$(dirname "$(ls /var/cache/kubeup/images/*/IMAGES 2>/dev/null | head -1)")}

netns_of() { echo "kubeup-demo-$1"; }
root_of() { echo "$DEMO_DIR/nodes/$1"; }
ip_of() { echo "$DEMO_NET.$((${1#node} + 1))"; }

# say TEXT: a heading of the demo's narration on stderr, in bold only when stderr is a terminal and NO_COLOR
# (https://no-color.org) is unset or empty: a log or a pipe gets no escape codes.
say() {
	if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then
		printf '\n\033[1m== %s\033[0m\n' "$*" >&2
	else
		printf '\n== %s\n' "$*" >&2
	fi
}
fail() { printf 'demo: %s\n' "$*" >&2; exit 1; }

# record KIND NAME: write down, before creating it, something demo-clean must remove.
record() { mkdir -p "$MADE"; echo "$2" >>"$MADE/$1"; }

# start_time PID: the process's start time in clock ticks since boot (field 22 of /proc/PID/stat), which tells
# a process from a later one that reuses its id.
start_time() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; set -- $s; echo "${20}"; }

# alive PIDFILE: whether the process a pid file records ("PID START") still runs, the same process.
alive() {
	local pid start
	read -r pid start <"$1" 2>/dev/null || return 1
	[ -n "$pid" ] && [ "$(start_time "$pid" 2>/dev/null)" = "$start" ]
}

# api_addresses: the addresses api.<cluster> holds, as the demo's BIND answers, sorted. protokube publishes a
# node's address there only while the node's own kube-apiserver answers /readyz; before any does, the name holds
# the placeholder 203.0.113.123.
api_addresses() { dig +short "@$GATEWAY" "api.$NAME" A | sort; }

# readyz_at ADDRESS: what the kube-apiserver at ADDRESS answers to GET /readyz (kubectl in node1's network
# namespace with the demo's kubeconfig, its server's name replaced by ADDRESS, the certificate still checked for
# api.<cluster>).
readyz_at() {
	local server
	server=$(sed -n 's/^ *server: *//p' "$KUBECONFIG_FILE" | head -1)
	ip netns exec "$(netns_of "${NODES[0]}")" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=5s \
		--server="${server/"api.$NAME"/$1}" --tls-server-name="api.$NAME" get --raw /readyz 2>&1
}
