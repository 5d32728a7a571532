#!/usr/bin/env bash
# offline-split.sh — the two-party offline phase against none, in alternation (issue 25).
#
#   bash scripts/offline-split.sh N PROGRAM.sciir INPUT.npy [scirun flags...]
#
# Runs `scirun --local PROGRAM --ot ferret` once to write the first-inference plan
# (--offline-plans), then N pairs: A with the offline phase off (--offline-mib 0), B with it on
# and the plan. Prints, per pair, A's run and online time, B's offline and online time, both
# runs' bytes (this party's, both ways) and B's Ferret iterations ahead/online, then the medians
# of B's online time over A's and of B's online share of its run. Times are the client's
# report's (run_ms, offline.offline_ms, offline.online_ms); on a shared machine quote the
# medians of the ratios, not single runs. Needs scirun on PATH (or SCIRUN=...) and python3.
set -euo pipefail
if [[ $# -lt 3 || ! $1 =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 N PROGRAM.sciir INPUT.npy [scirun flags...]" >&2
	exit 2
fi
n=$1 prog=$2 input=$3
shift 3
scirun=${SCIRUN:-scirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--local "$prog" --ot ferret --input "$input" --quiet "$@")
"$scirun" "${common[@]}" --offline-plans "$tmp/plans" --report "$tmp/w.json" > /dev/null
for i in $(seq "$n"); do
	"$scirun" "${common[@]}" --offline-mib 0 --report "$tmp/a$i.json" > /dev/null
	"$scirun" "${common[@]}" --offline-plans "$tmp/plans" --report "$tmp/b$i.json" > /dev/null
done
python3 - "$tmp" "$n" <<'PY'
import json, statistics, sys
tmp, n = sys.argv[1], int(sys.argv[2])
ratio, share = [], []
print("pair | off: run ms, online ms, bytes | on: run ms, offline ms, online ms, offline + online bytes, iterations ahead/online")
for i in range(1, n + 1):
    a, b = (json.load(open(f"{tmp}/{x}{i}.json")) for x in "ab")
    ao, bo = a["offline"], b["offline"]
    ab = ao["offline_bytes"] + ao["online_bytes"]
    print(f"{i} | {a['run_ms']:.0f}, {ao['online_ms']:.0f}, {ab} | {b['run_ms']:.0f}, {bo['offline_ms']:.0f}, "
          f"{bo['online_ms']:.0f}, {bo['offline_bytes']} + {bo['online_bytes']}, {bo['ahead_iterations']}/{bo['online_iterations']}")
    ratio.append(bo["online_ms"] / ao["online_ms"])
    share.append(bo["online_ms"] / b["run_ms"])
print(f"median online(on)/online(off) {statistics.median(ratio):.2f} {sorted(round(x, 2) for x in ratio)}")
print(f"median online share of the run (on) {statistics.median(share):.2f} {sorted(round(x, 2) for x in share)}")
PY
