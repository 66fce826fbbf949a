#!/usr/bin/env bash
# make conformance: the upstream Kubernetes conformance tests of the focus (hack/conformance/focus) against the
# demo's cluster, with the e2e test binary and the test images `make conformance-deps` built (docs/conformance.md).
#
#   conformance.sh preflight   fail, saying what to run, unless the demo's cluster answers (make demo ran and
#                              its machines still run); with DRY_RUN=1, no cluster is needed
#   conformance.sh run         import the test images into each demo node's containerd, pinned against kubelet's
#                              image garbage collection (no registry is reachable: the nodes must hold every image
#                              the tests run); remove the control plane's NoSchedule taint from the demo's nodes
#                              (all of them are control-plane nodes; the tests schedule ordinary pods); then run
#                              e2e.test in node1's network namespace (its resolver is the demo's BIND, as for
#                              kubectl), its images named through KUBE_TEST_REPO_LIST, the JUnit report written
#                              into CONFORMANCE_REPORT; print each failure and skip, then the passed / failed /
#                              skipped counts. Exit 1 when a spec failed. DRY_RUN=1: ginkgo's dry run, no cluster:
#                              the specs the focus selects, and their count.
#
# KUBEUP_E2E_TEST and KUBEUP_CONFORMANCE_IMAGES (the Makefile exports them) are the caches; KUBEUP_KUBECTL is
# the kubectl the kubectl tests run. CONFORMANCE_TIMEOUT (default 3h) bounds the whole run (ginkgo's -timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/demo-env.sh
. hack/machine.sh
fail() { printf 'conformance: %s\n' "$*" >&2; exit 1; }

REPORT=${CONFORMANCE_REPORT:-/tmp/kubeup-conformance}
DRY_RUN=${DRY_RUN:-}

# focus: the lines of hack/conformance/focus that are not comments, joined with |.
focus() { grep -v -e '^#' -e '^$' hack/conformance/focus | paste -sd'|'; }

preflight() {
	[ -n "$DRY_RUN" ] && return 0
	[ "$(id -u)" = 0 ] || fail "run as root (the tests run in the demo's network namespace)"
	local ns
	ns=$(netns_of "${NODES[0]}")
	[ -e "/run/netns/$ns" ] && [ -f "$KUBECONFIG_FILE" ] ||
		fail "no demo cluster runs ($ns or $KUBECONFIG_FILE is missing): run make demo first, then make conformance"
	ip netns exec "$ns" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=10s get --raw /readyz >/dev/null 2>&1 ||
		fail "the demo's API does not answer /readyz (make demo-status says why): make demo-clean, then make demo"
}

run() {
	local e2e=${KUBEUP_E2E_TEST:?make conformance-deps sets KUBEUP_E2E_TEST}/e2e.test
	local images=${KUBEUP_CONFORMANCE_IMAGES:?make conformance-deps sets KUBEUP_CONFORMANCE_IMAGES}
	[ -x "$e2e" ] || fail "$e2e is missing: make conformance-deps builds it"
	[ -f "$images/IMAGES" ] || fail "$images/IMAGES is missing: make conformance-deps writes the images"
	local args=(-ginkgo.focus="$(focus)" -ginkgo.timeout="${CONFORMANCE_TIMEOUT:-3h}" -ginkgo.no-color)
	if [ -n "$DRY_RUN" ]; then
		# The dry run walks the specs without running them: no cluster, no kubeconfig is read.
		local out
		out=$(KUBE_TEST_REPO_LIST="$images/repo-list.yaml" "$e2e" "${args[@]}" -ginkgo.dry-run -ginkgo.v 2>&1) ||
			{ printf '%s\n' "$out" | tail -n 30; fail "e2e.test -ginkgo.dry-run failed"; }
		printf '%s\n' "$out" | sed -n 's/^\(\[sig-[^]]*\] .*\[Conformance\]\).*/\1/p' | sort -u
		printf '%s\n' "$out" | grep -E '^Ran [0-9]+ of [0-9]+ Specs' || fail "the dry run printed no count"
		return 0
	fi
	say "The test images, imported into each node's containerd (ctr -n k8s.io images import)"
	local n archive ref
	for n in "${NODES[@]}"; do
		while read -r archive ref; do
			in_machine "$n" ctr -n k8s.io images import - <"$images/$archive" >/dev/null 2>&1 ||
				fail "importing $ref ($images/$archive) on $n"
			# Pinned: kubelet's image garbage collection (a disk over 85% full) would remove an image no
			# running pod uses, and no registry here gives it back.
			in_machine "$n" ctr -n k8s.io images label "$ref" io.cri-containerd.pinned=pinned >/dev/null 2>&1 ||
				fail "pinning $ref on $n"
		done <"$images/IMAGES"
		echo "  $n: $(wc -l <"$images/IMAGES") images" >&2
	done
	# The demo's nodes are all control-plane nodes, registered with the control plane's NoSchedule taint; the tests
	# schedule ordinary pods, and the suite refuses to start without a schedulable node. The taint goes, as on a
	# kind cluster without workers (kubelet adds it only when it registers its Node).
	say "The demo's nodes are all control-plane nodes: their NoSchedule taint is removed, so that the tests' pods can run there"
	ip netns exec "$(netns_of "${NODES[0]}")" "$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --request-timeout=10s \
		taint nodes --all node-role.kubernetes.io/control-plane:NoSchedule- 2>&1 | grep -v 'not found' || true
	rm -rf "$REPORT"
	mkdir -p "$REPORT"
	say "e2e.test (Kubernetes conformance, the focus of hack/conformance/focus) against $NAME; report: $REPORT"
	local status=0
	# In node1's network namespace, as kubectl: api.<cluster> resolves through the demo's BIND.
	ip netns exec "$(netns_of "${NODES[0]}")" env KUBE_TEST_REPO_LIST="$images/repo-list.yaml" \
		"$e2e" "${args[@]}" --kubeconfig="$KUBECONFIG_FILE" --provider=local --kubectl-path="$KUBECTL" \
		--report-dir="$REPORT" 2>&1 | tee "$REPORT/e2e.log" || status=$?
	[ -f "$REPORT/junit_01.xml" ] || fail "e2e.test (exit $status) wrote no $REPORT/junit_01.xml: its output is in $REPORT/e2e.log"
	say "The counts ($REPORT/junit_01.xml)"
	(cd hack/conformance && "${GO:-go}" run ./junit "$REPORT/junit_01.xml")
}

case "${1:-}" in
preflight | run) "$1" ;;
*) fail "usage: conformance.sh preflight | run" ;;
esac
