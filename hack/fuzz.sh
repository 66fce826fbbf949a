#!/usr/bin/env bash
# hack/fuzz.sh runs every fuzz target of kubeup for a bounded time: `go test -fuzz` of one target at a time
# (go runs one fuzz target per invocation), each for FUZZTIME (default 10s). It stops at the first failure and
# names the target; go has then written the failing input to the package's testdata/fuzz/<target>/: fix the code,
# keep that file as seed corpus (plain `go test` then runs it as a regression test), and commit both.
#
#   hack/fuzz.sh                    every target, FUZZTIME each (make test)
#   FUZZTIME=5m hack/fuzz.sh        longer (make soak)
#   hack/fuzz.sh FuzzHostsBlock     only the targets named
#   hack/fuzz.sh -list              the targets, one "package target" a line
#
# GO names the go command (default go). FUZZ_PARALLEL sets -parallel (default: go's, GOMAXPROCS).
# FUZZMINIMIZETIME bounds the minimisation of each new interesting input (default 5s; go's own is 60s, which on
# a large seed such as a node configuration takes most of a short run).
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}

# package target: every Fuzz function of the tree (checked below: a new one must be added here).
targets=(
	"./model FuzzDecodeSpec"
	"./model FuzzNodeConfig"
	"./tasks/localtasks FuzzHostsBlock"
	"./tasks/localtasks FuzzZoneRoundTrip"
	"./tasks/dnstasks FuzzDNSName"
	"./engine FuzzPrinter"
)

if [[ ${1:-} == -list ]]; then
	printf '%s\n' "${targets[@]}"
	exit 0
fi

# Every Fuzz function of the tree is listed: a new target is not silently left out.
listed=$(printf '%s\n' "${targets[@]}" | awk '{print $2}' | sort)
found=$(grep -rhoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)\(' . | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort)
if [[ $listed != "$found" ]]; then
	echo "hack/fuzz.sh: the targets listed differ from the Fuzz functions of the tree: add the new one to targets" >&2
	diff <(echo "$listed") <(echo "$found") >&2 || true
	exit 1
fi

parallel=()
if [[ -n ${FUZZ_PARALLEL:-} ]]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
ran=0
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	if [[ $# -gt 0 ]] && ! printf '%s\n' "$@" | grep -qx "$name"; then
		continue
	fi
	t0=$SECONDS
	if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "${parallel[@]}" "$pkg" >"$log" 2>&1; then
		cat "$log" >&2
		echo "hack/fuzz.sh: FAIL: $name in $pkg: the failing input is under $pkg/testdata/fuzz/$name/ (re-run it with the command above); fix the code and keep the input as seed corpus" >&2
		exit 1
	fi
	echo "ok   $name $pkg ($((SECONDS - t0))s)"
	ran=$((ran + 1))
done
if [[ $ran -eq 0 ]]; then
	echo "hack/fuzz.sh: no target named $*: see hack/fuzz.sh -list" >&2
	exit 1
fi
echo "hack/fuzz.sh: $ran fuzz targets, $FUZZTIME each, in $((SECONDS - start))s"
