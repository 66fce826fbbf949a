#!/usr/bin/env bash
# make demo-status: etcdctl endpoint health against every etcd member of the demo's cluster through its DNS
# name, over TLS with kube-apiserver's etcd client certificate, from node1's network namespace (whose resolver is
# the demo's BIND); the API's readiness at every address api.<cluster> holds, with the demo's kubeconfig (kubeup export
# kubeconfig); the Nodes, each Ready, registered by its own kubelet, and the pods, each Running; then which
# machine mounts which volume, checking that no device (nor loop image) is mounted twice. Exit 0 only when every
# member is healthy, every address of api.<cluster> answers /readyz, every node is Ready and every pod Running,
# and no device is mounted twice.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/demo-env.sh
. hack/machine.sh

[ "$(id -u)" = 0 ] || fail "demo-status: run as root"
ns=$(netns_of "${NODES[0]}")
[ -e "/run/netns/$ns" ] || fail "demo-status: no demo runs ($ns does not exist): make demo"

status=0
pki=$(machine_root "${NODES[0]}")/srv/kubernetes/kube-apiserver
tls=(--cacert="$pki/etcd-ca.crt" --cert="$pki/etcd-client.crt" --key="$pki/etcd-client.key")
for etcd in main:4001 events:4002; do
	cluster=${etcd%:*} port=${etcd#*:} eps=
	for n in "${NODES[@]}"; do eps+=${eps:+,}https://a-${n#node}.etcd-$cluster.internal.$NAME:$port; done
	echo "etcd $cluster:"
	printf '$ ip netns exec %s etcdctl --endpoints=%s --cacert=... --cert=... --key=... endpoint health\n' "$ns" "$eps" >&2
	out=$(ip netns exec "$ns" etcdctl --endpoints="$eps" "${tls[@]}" --command-timeout=5s endpoint health 2>&1) || status=1
	sed 's/^/  /' <<<"$out"
	[ "$(grep -c 'is healthy' <<<"$out")" = "${#NODES[@]}" ] || status=1
done

# DEMO_STATUS_ETCD_ONLY=1 (make demo, before it starts the API): etcd and the volumes only.
if [ "${DEMO_STATUS_ETCD_ONLY:-}" != 1 ]; then
	# Every address the name holds: kubectl may reach any of them.
	echo "the API (https://api.$NAME), each address it holds:"
	printf '$ ip netns exec %s kubectl --kubeconfig=%s --server=https://ADDRESS --tls-server-name=api.%s get --raw /readyz\n' "$ns" "$KUBECONFIG_FILE" "$NAME" >&2
	ips=$(api_addresses)
	[ -n "$ips" ] || { echo "  api.$NAME holds no address"; status=1; }
	for ip in $ips; do
		out=$(readyz_at "$ip") || status=1
		echo "  $ip: $out"
		[ "$out" = ok ] || status=1
	done
	k() { ip netns exec "$ns" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=10s "$@"; }
	echo "the nodes (kubectl get nodes -o wide):"
	out=$(k get nodes -o wide 2>&1) || status=1
	sed 's/^/  /' <<<"$out"
	ready=$(awk 'NR > 1 && $2 == "Ready"' <<<"$out" | wc -l)
	[ "$ready" = "${#NODES[@]}" ] || { echo "  $ready of ${#NODES[@]} nodes Ready"; status=1; }
	echo "the pods (kubectl get pods -A -o wide):"
	out=$(k get pods -A -o wide 2>&1) || status=1
	sed 's/^/  /' <<<"$out"
	notrunning=$(awk 'NR > 1 && $4 != "Running"' <<<"$out")
	[ -z "$notrunning" ] || { echo "  not Running:"; sed 's/^/    /' <<<"$notrunning"; status=1; }
fi

echo "volumes:"
# Each machine's mounts of loop devices: SOURCE TARGET; a loop device's image from losetup.
declare -A seen_dev seen_img
while read -r src target; do
	img=
	if [[ $src == /dev/loop* ]]; then img=$(losetup -n -O BACK-FILE "$src" 2>/dev/null | sed 's/ *$//'); fi
	echo "  $target: $src${img:+ ($img)}"
	if [ -n "${seen_dev[$src]:-}" ]; then echo "  MOUNTED TWICE: $src at ${seen_dev[$src]} and $target"; status=1; fi
	if [ -n "$img" ] && [ -n "${seen_img[$img]:-}" ]; then echo "  MOUNTED TWICE: $img at ${seen_img[$img]} and $target"; status=1; fi
	seen_dev[$src]=$target
	[ -z "$img" ] || seen_img[$img]=$target
done < <(for n in "${NODES[@]}"; do in_machine "$n" findmnt -rn -o SOURCE,TARGET | awk -v n="$n" '$1 ~ /^\/dev\/loop/ { print $1, n ":" $2 }'; done)
if [ "$status" = 0 ]; then
	api="; the API is ready, every node Ready and every pod Running"
	[ "${DEMO_STATUS_ETCD_ONLY:-}" != 1 ] || api=
	echo "every member is healthy$api; no device is mounted twice"
fi
exit "$status"
