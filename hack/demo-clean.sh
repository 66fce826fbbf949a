#!/usr/bin/env bash
# make demo-clean: remove everything make demo made, by what it recorded under DEMO_DIR/made: its processes (by
# process id and start time), the node roots' mounts, the loop devices over the pool's images, the network
# namespaces, links and /etc/netns directories, named's directory, and DEMO_DIR itself.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/demo-env.sh
. hack/machine.sh

[ -e "$DEMO_DIR" ] || { echo "demo-clean: nothing to clean ($DEMO_DIR does not exist)" >&2; exit 0; }
[ "$(id -u)" = 0 ] || fail "demo-clean: run as root"

# stop SIGNAL PIDFILE...: signal the processes the files record that still run; wait up to 15s for them to end,
# then SIGKILL what is left.
stop() {
	local sig=$1 f pid start left
	shift
	for f in "$@"; do
		[ -e "$f" ] || continue
		if alive "$f"; then read -r pid start <"$f"; kill "-$sig" "$pid" 2>/dev/null || true; fi
	done
	for _ in $(seq 150); do
		left=
		for f in "$@"; do [ -e "$f" ] && alive "$f" && left=1; done
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	for f in "$@"; do
		if [ -e "$f" ] && alive "$f"; then
			read -r pid start <"$f"; echo "demo-clean: pid $pid did not stop: SIGKILL" >&2; kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

shopt -s nullglob
# The machines first: SIGTERM to systemd-nspawn powers one off (systemd stops protokube, kubelet and containerd);
# a machine's init killed ends every process of its PID namespace, and its mounts go with its mount namespace.
# Then named.
stop TERM "$MADE"/pids/machine-*.pid
stop KILL "$MADE"/pids/init-*.pid
stop TERM "$MADE"/pids/named.pid

# The machines' cgroups, deepest first (kubelet's pods' cgroups below them), once their processes are gone.
if [ -e "$MADE/cgroups" ]; then
	while read -r cg; do
		[ -d "$cg" ] || continue
		find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || find "$cg" -depth -type d -exec rmdir {} +
	done <"$MADE/cgroups"
fi
# kubelet's kernel settings: the host's former values.
if [ -e "$MADE/sysctls" ]; then
	while IFS== read -r k v; do echo "$v" >"/proc/sys/$k"; done <"$MADE/sysctls"
	rm "$MADE/sysctls"
	if [ "$(readlink "$DEMO_SYSCTLS")" = "$MADE/sysctls" ]; then rm "$DEMO_SYSCTLS"; fi
fi

# Mounts under DEMO_DIR (the volumes protokube mounted under the node roots), deepest first.
for _ in 1 2 3; do
	mapfile -t mps < <(awk -v d="$DEMO_DIR/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
	[ "${#mps[@]}" = 0 ] && break
	for mp in "${mps[@]}"; do umount "$mp" 2>/dev/null || umount -l "$mp" || true; done
done

# Loop devices over the pool's images.
for img in "$POOL"/*.img; do
	for dev in $(losetup -j "$img" | cut -d: -f1); do losetup -d "$dev" || true; done
done

# gone KIND NAME PATH: delete network namespace or link NAME (ip KIND del NAME); one already gone (PATH does not
# exist) is done. Deleting a namespace removes its veth pair asynchronously: the host's end of the pair may go
# between any check and the delete, so the delete is tried first and its failure counts only while PATH is there.
gone() {
	ip "$1" del "$2" 2>/dev/null || [ ! -e "$3" ] || ip "$1" del "$2"
}

# Network namespaces (with their veth ends), links, /etc/netns directories, named's directory.
if [ -e "$MADE/netns" ]; then
	while read -r ns; do
		gone netns "$ns" "/run/netns/$ns"
		rm -rf "/etc/netns/$ns"
	done <"$MADE/netns"
fi
if [ -e "$MADE/links" ]; then
	while read -r link; do gone link "$link" "/sys/class/net/$link"; done <"$MADE/links"
fi
if [ -e "$MADE/emptydirs" ]; then
	while read -r d; do rmdir "$d" 2>/dev/null || true; done <"$MADE/emptydirs"
fi
if [ -e "$MADE/dirs" ]; then
	while read -r d; do rm -rf --one-file-system "$d"; done <"$MADE/dirs"
fi

if grep -q "$DEMO_DIR/" /proc/self/mountinfo; then fail "demo-clean: mounts are left under $DEMO_DIR"; fi
rm -rf --one-file-system "$DEMO_DIR"
echo "demo-clean: removed everything the demo made" >&2
