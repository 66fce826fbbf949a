#!/usr/bin/env bash
# make demo: the main job of kubeup on this machine, on the local provider and a file:// state store.
# Narration goes to stderr, kubeup's own output to stdout. Every step must succeed: the script stops at the
# first failure, and checks what each step promised.
set -euo pipefail

KUBEUP=${KUBEUP:-bin/kubeup}
DEMO_DIR=${DEMO_DIR:-/tmp/kubeup-demo}
NAME=demo.example.com
export KUBEUP_STATE_STORE="file://$DEMO_DIR/state"

say() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
run() { printf '$ kubeup %s\n' "$*" >&2; "$KUBEUP" "$@"; }
fail() { printf 'demo: %s\n' "$*" >&2; exit 1; }

rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"

say "A new cluster: 3 control-plane nodes in zones a, b and c, kept in $KUBEUP_STATE_STORE"
run create cluster --name "$NAME" --cloud local --zones a,b,c --control-plane-count 3

say "The complete spec fills in every default; here, kube-apiserver's etcd servers and the etcd members"
run get cluster "$NAME" --full -o yaml | grep -A3 -E '^  kubeAPIServer:|etcdServers:' | head -12
run get instancegroups --name "$NAME"

say "Dry run: what update would do (the report is long; its summary)"
plan=$(run update cluster "$NAME")
grep -E '^(Will|  [A-Za-z]+/)' <<<"$plan"
tail -1 <<<"$plan"
[ "$(grep -c '^  LocalVolume/' <<<"$plan")" = 6 ] || fail "the dry run should list 6 volumes"
[ ! -e "$DEMO_DIR/state-local/volumes" ] || fail "the dry run created something"

say "Apply it"
run update cluster "$NAME" --yes
ls -ls "$DEMO_DIR/state-local/volumes"/*.img >&2

say "Apply again: nothing left to do"
run update cluster "$NAME" | tee "$DEMO_DIR/second.txt"
grep -q 'No changes need to be applied' "$DEMO_DIR/second.txt" || fail "the second update found changes"

say "A broken spec is refused with every problem listed, and the store is not touched"
before=$(cd "$DEMO_DIR" && find state -type f -print0 | sort -z | xargs -0 sha256sum)
run get cluster "$NAME" -o yaml | sed -e 's/^  zones:/  kubernetesVersion: latest\n  networking: {podCIDR: 100.64.0.0\/12}\n  zones:/' >"$DEMO_DIR/broken.yaml"
if run replace -f "$DEMO_DIR/broken.yaml"; then fail "the broken spec was accepted"; fi
after=$(cd "$DEMO_DIR" && find state -type f -print0 | sort -z | xargs -0 sha256sum)
[ "$before" = "$after" ] || fail "the refused replace changed the store"
echo "(state store unchanged)" >&2

say "Delete the cluster: its volumes, DNS records and state"
run delete cluster "$NAME" --yes | tail -3
[ ! -e "$DEMO_DIR/state-local" ] || fail "volumes or records are left"
[ -z "$(find "$DEMO_DIR/state" -type f)" ] || fail "state files are left: $(find "$DEMO_DIR/state" -type f)"

say "Done. Everything ran in $DEMO_DIR"
