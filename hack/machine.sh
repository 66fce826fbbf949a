# Sourced by hack/demo.sh and hack/demo-clean.sh, after hack/demo-env.sh: the demo's nodes as machines of their
# own. Each is the cached Debian 12 root filesystem (make rootfs) booted with systemd in systemd-nspawn, in its
# node's network namespace, given what a virtual machine would give kubelet and containerd and nspawn does not by
# default (internal/e2e.BootMachine does the same for the tests):
#   - every capability, and no seccomp filter of nspawn's (runc installs the pods' own);
#   - /proc/sys/net writable (SYSTEMD_NSPAWN_API_VFS_WRITABLE=network): the network namespace is the node's own,
#     and the pods' bridge (the CNI bridge plugin) turns IP forwarding on in it;
#   - on cgroup v1, a cgroup of its own in each hierarchy, mounted writable in the machine (nspawn mounts them
#     read-only; the machine's cgroup namespace makes its cgroup the root it sees): each kubelet keeps its pods
#     under a root of its own; on the unified hierarchy with systemd as PID 1, a transient scope systemd
#     delegates (systemd-run --scope -p Delegate=yes), where nspawn gives the machine its own subtree (this path
#     has not run on the project's CI machines, which are cgroup v1 without systemd);
#   - /dev/kmsg (kubelet's OOM watcher), loop device nodes (protokube attaches the pool's volumes: a VM's udev
#     would make them), /etc/hosts, /etc/resolv.conf (the demo's BIND);
#   - /var/lib/containerd on the host's file system: overlayfs, containerd's snapshotter, cannot take an upper
#     directory on the machine's own overlay root;
#   - the volume pool at the same path as on the host (protokube claims and attaches its volumes);
#   - kubelet's kernel settings (MACHINE_SYSCTLS) on the host, put back by demo-clean.
# Everything is recorded before it is made: MADE/machines (name), MADE/pids/machine-NAME.pid, MADE/cgroups,
# MADE/sysctls (the former values).

ROOTFS=${KUBEUP_E2E_ROOTFS:-/var/cache/kubeup/rootfs-bookworm}
MACHINE_SYSCTLS=(vm/overcommit_memory=1 kernel/panic=10 kernel/panic_on_oops=1)

machine_dir() { echo "$DEMO_DIR/machines/$1"; }
# machine_pid NODE: the host's process id of the machine's systemd (recorded by boot_machine).
machine_pid() { cut -d' ' -f1 "$MADE/pids/init-$1.pid"; }
# machine_root NODE: the machine's file system as its processes see it, mounts and /run included: nodeup's --root.
machine_root() { echo "/proc/$(machine_pid "$1")/root"; }
# in_machine NODE CMD...: run CMD in every namespace of the machine.
in_machine() { local n=$1; shift; nsenter -t "$(machine_pid "$n")" -a -- "$@"; }

# hold_sysctls: set kubelet's kernel settings on the host, recording the former values first (once).
hold_sysctls() {
	local kv k
	# The end-to-end tests hold the same settings through their own record: two holders would each take the
	# other's values for the host's and put the wrong ones back.
	if [ ! -e "$MADE/sysctls" ] && [ -e /run/kubeup-e2e.sysctl.json ]; then
		fail "an end-to-end test holds kubelet's kernel settings on this host (/run/kubeup-e2e.sysctl.json): run make demo once it has ended (a test killed before its end leaves the file: the next e2e run's reap puts the settings back and removes it)"
	fi
	if [ ! -e "$MADE/sysctls" ]; then
		mkdir -p "$MADE"
		for kv in "${MACHINE_SYSCTLS[@]}"; do k=${kv%%=*}; echo "$k=$(cat "/proc/sys/$k")"; done >"$MADE/sysctls.tmp"
		mv "$MADE/sysctls.tmp" "$MADE/sysctls"
	fi
	# The tests look here before they set the same settings (internal/e2e's holdSysctls), and refuse.
	ln -sfn "$MADE/sysctls" "$DEMO_SYSCTLS"
	for kv in "${MACHINE_SYSCTLS[@]}"; do echo "${kv#*=}" >"/proc/sys/${kv%%=*}"; done
}

# machine_cgroups NODE: make the machine's cgroup in each cgroup v1 hierarchy below this shell's own (not
# name=systemd: the machine's systemd makes its own there), cpuset's cpus and mems copied from the parent; print
# the cgroup.procs files nspawn joins.
machine_cgroups() {
	local n=$1 line ctl path hier dir
	while IFS= read -r line; do
		ctl=${line#*:}; path=${ctl#*:}; ctl=${ctl%%:*}
		case $ctl in "" | name=*) continue ;; esac
		hier=/sys/fs/cgroup/$ctl
		[ -d "$hier" ] || continue
		dir=$hier${path%/}/kubeup-demo-$n
		record cgroups "$dir"
		mkdir "$dir"
		if [ "$ctl" = cpuset ]; then
			cat "$(dirname "$dir")/cpuset.cpus" >"$dir/cpuset.cpus"
			cat "$(dirname "$dir")/cpuset.mems" >"$dir/cpuset.mems"
		fi
		echo "$dir/cgroup.procs"
	done </proc/self/cgroup
}

# boot_machine NODE: boot the node's machine in its network namespace and wait until its systemd runs.
boot_machine() {
	local n=$1 dir upper work root procs scope pid init i
	dir=$(machine_dir "$n") upper=$dir/upper work=$dir/work root=$dir/root
	[ -d "$ROOTFS" ] || fail "$ROOTFS is missing: make rootfs debootstraps it (make demo does)"
	mkdir -p "$upper" "$work" "$root" "$dir/containerd"
	record mounts "$root"
	mount -t overlay overlay -o "lowerdir=$ROOTFS,upperdir=$upper,workdir=$work" "$root"
	echo "$n" >"$root/etc/hostname" # the node's name: kubelet's and protokube's (the cached rootfs has the host's)
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost\n' "$n" >"$root/etc/hosts"
	printf 'nameserver %s\noptions timeout:1 attempts:2\n' "$GATEWAY" >"$root/etc/resolv.conf"
	procs= scope=()
	if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
		procs=$(machine_cgroups "$n" | paste -sd' ')
	elif [ -d /run/systemd/system ]; then
		# The unified hierarchy on a host booted with systemd: nspawn --keep-unit stays in the unit it was started
		# in, which must be delegated, and the machine's systemd, containerd and kubelet need the controllers
		# below it: a transient scope that systemd delegates, which nspawn is exec'd in (its PID stays).
		scope=(systemd-run --scope --quiet --collect --property=Delegate=yes --unit="kubeup-demo-$n")
	fi
	hold_sysctls
	record machines "$n"
	# nspawn joins the machine's cgroups before it starts: the machine's cgroup namespace is made from them.
	background "machine-$n" env SYSTEMD_SECCOMP=0 SYSTEMD_NSPAWN_API_VFS_WRITABLE=network PROCS="$procs" sh -c 'for f in $PROCS; do echo $$ >"$f"; done; exec "$@"' sh \
		"${scope[@]}" systemd-nspawn --register=no --keep-unit --quiet --boot --machine="$n" --directory="$root" \
		--network-namespace-path="/run/netns/$(netns_of "$n")" --resolv-conf=off --capability=all \
		--bind=/dev/kmsg --bind="$dir/containerd:/var/lib/containerd" \
		--bind="$POOL"
	read -r pid _ <"$MADE/pids/machine-$n.pid"
	init=
	for _ in $(seq 300); do
		init=$(machine_init "$pid")
		[ -n "$init" ] && break
		sleep 0.1
	done
	[ -n "$init" ] || fail "machine $n did not start its systemd (log: $DEMO_DIR/logs/machine-$n.log)"
	echo "$init $(start_time "$init")" >"$MADE/pids/init-$n.pid"
	wait_for 60 "machine $n's systemd to be running" machine_running "$n"
	if [ -n "$procs" ]; then in_machine "$n" sh -c "$WRITABLE_CGROUPS"; fi
	# Loop device nodes: protokube's losetup takes the first free device, whose node must exist.
	in_machine "$n" sh -c '[ -e /dev/loop-control ] || mknod /dev/loop-control c 10 237; i=0; while [ $i -lt 64 ]; do [ -e /dev/loop$i ] || mknod /dev/loop$i b 7 $i; i=$((i+1)); done'
}

# machine_init PID: the process id of the systemd that nspawn PID started, a descendant of it.
machine_init() {
	local c
	for c in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
		if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ]; then echo "$c"; return; fi
		machine_init "$c"
	done
}

machine_running() {
	local state
	state=$(in_machine "$1" systemctl is-system-running 2>/dev/null) || true
	[ "$state" = running ] || [ "$state" = degraded ]
}

# WRITABLE_CGROUPS mounts each cgroup v1 hierarchy of the machine again, writable (a remount of nspawn's
# read-only mounts can be refused as busy; a new mount cannot). name=systemd is the machine's systemd's.
WRITABLE_CGROUPS='set -e
mount -o remount,rw /sys/fs/cgroup
awk '"'"'$(NF-2) == "cgroup" { print $5, $NF }'"'"' /proc/self/mountinfo | while read -r dir opts; do
	case ",$opts," in *,name=systemd,*) continue ;; esac
	o=$(printf "%s\n" "$opts" | tr , "\n" | grep -vx "rw\|ro" | paste -sd,)
	umount "$dir"
	mount -t cgroup -o "$o" cgroup "$dir"
done'
