#!/usr/bin/env bash
# debs.sh: the Debian packages of an image's base (make images: kube-proxy's iptables), pinned by version and
# sha256 in a list, downloaded once into a cache and unpacked into a directory that `images -base` makes a layer.
#
#   debs.sh pin PACKAGE...        print the pins of PACKAGE and everything it depends on (Depends and Pre-Depends,
#                                 recursively), as apt's index on this machine has them: PACKAGE VERSION ARCH SHA256.
#                                 A virtual package (bind9-dnsutils depends on "host") is left out when a package
#                                 of the set provides it (bind9-host), refused when none does.
#   debs.sh fetch LIST DIR        download every package LIST pins into DIR, once: a DIR with SHA256SUMS is complete
#                                 and is not asked again (no network). Each .deb's sha256 must be the pinned one.
#   debs.sh unpack DIR ROOT       unpack every .deb in DIR into ROOT (dpkg-deb -x: nothing is installed, no
#                                 maintainer script runs) and drop documentation and iconv modules. Where ROOT then
#                                 holds busybox (busybox-static: the conformance images' shell), make the links
#                                 of its applets that no package holds (bin/sh, usr/bin/seq, ...), as
#                                 `busybox --install -s` would, relative.
#   debs.sh root DIR ROOT         unpack as above, and make the links Debian's alternatives would: iptables,
#                                 ip6tables and their -save and -restore run the nf_tables backend
#                                 (xtables-nft-multi), Debian 12's default.
set -euo pipefail

die() { echo "debs.sh: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg dpkg-deb sha256sum; do
	command -v "$tool" >/dev/null || die "$tool not found: the base is made of Debian packages, on a Debian machine"
done

# alternatives are the programs kube-proxy runs by name, each linked to its nf_tables variant.
alternatives=(iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore)

pin() {
	[ $# -gt 0 ] || die "usage: debs.sh pin PACKAGE..."
	local p set
	set=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
		--no-enhances "$@" | grep -v '^ ' | sort -u)
	while read -r p; do
		case "$p" in '<'*)
			p=${p#<}; p=${p%>}
			apt-cache showpkg "$p" | sed -n '/^Reverse Provides:/,$p' | awk 'NR > 1 { print $1 }' |
				grep -qxF -f <(grep -v '^<' <<<"$set") ||
				die "<$p> is a virtual package no package of the set provides: pin the package that provides it"
			continue ;;
		esac
		apt-cache show --no-all-versions "$p" | awk -v p="$p" '
			$1 == "Version:" { v = $2 } $1 == "Architecture:" { a = $2 } $1 == "SHA256:" { s = $2 }
			END { if (v == "" || a == "" || s == "") exit 1; print p, v, a, s }' ||
			die "apt-cache show $p: no version, architecture or sha256"
	done <<<"$set"
}

# pins prints LIST's pins, without comments and blank lines, refusing a malformed line or another architecture.
pins() {
	local list=$1 arch n=0 p v a s rest
	arch=$(dpkg --print-architecture)
	while read -r p v a s rest; do
		n=$((n + 1))
		case "$p" in '' | '#'*) continue ;; esac
		[[ -n "$s" && -z "$rest" && "$s" =~ ^[0-9a-f]{64}$ ]] ||
			die "$list:$n: want PACKAGE VERSION ARCH SHA256 (debs.sh pin writes them)"
		[ "$a" = "$arch" ] || [ "$a" = all ] ||
			die "$list:$n: $p is pinned for $a, this machine is $arch: pin its packages with debs.sh pin"
		echo "$p $v $a $s"
	done <"$list"
}

fetch() {
	[ $# -eq 2 ] || die "usage: debs.sh fetch LIST DIR"
	local list=$1 dir=$2 tmp p v a s f got
	[ -f "$list" ] || die "$list: no such file"
	[ -f "$dir/SHA256SUMS" ] && return 0
	tmp="$dir.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	pins "$list" >"$tmp/PINS"
	[ -s "$tmp/PINS" ] || die "$list pins no package"
	echo "debs.sh: downloading the packages $list pins into $dir (once)" >&2
	# One apt-get for them all (apt verifies each against its signed index); root downloads: apt's sandbox user
	# could not write into the directory.
	local want=()
	while read -r p v a s; do want+=("$p=$v"); done <"$tmp/PINS"
	if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "${want[@]}" 2>/dev/null); then
		apt-get update -qq
		if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "${want[@]}"); then
			for p in "${want[@]}"; do
				apt-cache show "$p" 2>/dev/null | grep '^Package:' >/dev/null ||
					die "$list: ${p/=/ } is not in apt's index (Debian replaced it with a newer version): pin the" \
						"packages again with debs.sh pin, as docs/images.md says (a new list is a new cache key)"
			done
			die "apt-get download of the packages $list pins failed"
		fi
	fi
	while read -r p v a s; do
		f=$(compgen -G "$tmp/${p}_*_$a.deb") || die "apt-get download $p=$v wrote no ${p}_*_$a.deb"
		got=$(sha256sum "$f" | cut -d' ' -f1)
		[ "$got" = "$s" ] || die "$list: $(basename "$f") has sha256 $got, the list pins $s: refused"
		echo "$s  $(basename "$f")" >>"$tmp/SHA256SUMS.part"
	done <"$tmp/PINS"
	rm "$tmp/PINS"
	mv "$tmp/SHA256SUMS.part" "$tmp/SHA256SUMS"
	mkdir -p "$(dirname "$dir")"
	rm -rf "$dir"
	mv -T "$tmp" "$dir"
	trap - EXIT
}

unpack() {
	[ $# -eq 2 ] || die "usage: debs.sh unpack DIR ROOT"
	local dir=$1 root=$2 f applet
	[ -f "$dir/SHA256SUMS" ] || die "$dir has no SHA256SUMS: debs.sh fetch fills it"
	(cd "$dir" && sha256sum --quiet -c SHA256SUMS) || die "$dir: a package differs from its SHA256SUMS"
	mkdir -p "$root"
	for f in "$dir"/*.deb; do
		dpkg-deb -x "$f" "$root"
	done
	rm -rf "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/lintian "$root"/usr/lib/*/gconv
	[ -x "$root/bin/busybox" ] || return 0
	# --list-full names each applet's path (bin/sh, usr/bin/seq); a path a package holds is left as it is.
	"$root/bin/busybox" --list-full | while read -r applet; do
		[ -e "$root/$applet" ] || [ -L "$root/$applet" ] && continue
		mkdir -p "$root/$(dirname "$applet")"
		ln -s "$(realpath -m -s --relative-to="/$(dirname "$applet")" /bin/busybox)" "$root/$applet"
	done
}

root() {
	[ $# -eq 2 ] || die "usage: debs.sh root DIR ROOT"
	local dir=$1 root=$2 t
	unpack "$dir" "$root"
	for t in "${alternatives[@]}"; do
		[ -e "$root/usr/sbin/${t/tables/tables-nft}" ] || die "$dir: no package holds /usr/sbin/${t/tables/tables-nft}"
		ln -sfn "${t/tables/tables-nft}" "$root/usr/sbin/$t"
	done
}

cmd=${1:-}
shift || true
case "$cmd" in
pin | fetch | unpack | root) "$cmd" "$@" ;;
*) die "usage: debs.sh pin PACKAGE... | fetch LIST DIR | unpack DIR ROOT | root DIR ROOT" ;;
esac
