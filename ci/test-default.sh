#!/usr/bin/env bash
# The default row's tests (`make test-default`): the whole suite on the default Kubernetes/Argo pair, as
# three pytest sessions on one control plane, so the real node's CPU-bound training and the kwok tests'
# waiting overlap (measured: the kwok tests leave 70-85 % of the CPU idle; docs/benchmarks.md):
#
#   1. alone:   the benchmarks and the tests marked `exclusive` (they kill control-plane components,
#               helm-install the chart over the cluster's CRD or own cluster-wide Kueue objects), nothing
#               else running;
#   2. beside:  the `realnode` tests (output prefixed `[realnode]`) and, at the same time, every other test.
#
# The local control plane is started here, before the sessions (so none of them stops it at its end), and
# stopped after them unless it was up before; with $KUBECONFIG naming a file, that cluster is used as is.
# Each session fails on "no tests ran" (pytest's exit 5) like any other failure; the exit status is 1 when
# any session failed.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
pytest=("$venv/bin/pytest")
python="$venv/bin/python"
say() { printf '[tests] %s\n' "$*"; }

mkdir -p build
started_here=
if [[ ! -f ${KUBECONFIG:-} ]]; then
  "$python" -m ci.devcluster status > /dev/null 2>&1 || started_here=1
  "$python" -m ci.devcluster up || { [[ -n $started_here ]] && "$python" -m ci.devcluster down; exit 1; }
fi
stop() { [[ -n $started_here ]] && "$python" -m ci.devcluster down > /dev/null; }
trap stop EXIT
export DIHERA_KEEP_CLUSTER=1 # tests/integration/conftest.py: no session stops the cluster or Kueue

rc=0
start=$SECONDS
say "1/2 alone: the benchmarks and the \`exclusive\` tests"
"${pytest[@]}" --durations=10 -p no:cacheprovider -m "bench or exclusive" tests || rc=1
say "1/2 alone: $((SECONDS - start))s"

start=$SECONDS
say "2/2 beside: the \`realnode\` tests (lines prefixed [realnode]) and every other test at once"
{ "${pytest[@]}" --durations=10 -p no:cacheprovider --basetemp=build/pytest-realnode \
    -m "realnode and not bench and not exclusive" tests/integration 2>&1; echo "$?" > build/realnode.rc; } \
  | sed -u 's/^/[realnode] /' &
real=$!
# Whole lines only (sed -u), so the two sessions' lines never mix on one line.
"${pytest[@]}" --durations=20 -m "not realnode and not bench and not exclusive" tests 2>&1 | sed -u '' || rc=1
wait "$real"
[[ $(cat build/realnode.rc 2> /dev/null) == 0 ]] || rc=1
say "2/2 beside: $((SECONDS - start))s"
exit $rc
