#!/usr/bin/env bash
# gorag beside the peers (nearest, prototype, probe) on every shared dataset and shot count,
# retrieval only (--llm none), test texts: the table of docs/results/2026-11-29-peers.md.
#
#   scripts/eval-peers.sh OUT_DIR [EXTRA EVAL FLAGS...]
#   scripts/eval-peers.sh out/peers --embedding-model all-MiniLM-L6-v2-int8
#
# Each run's report stays in OUT_DIR/<dataset>-<k>shot/; the accuracy by round of every
# strategy is printed as one line a strategy. GORAG (the binary, default: target/release/gorag),
# DATA (default: ../shared/data) and SHOTS (default: "1 5 10"; a dataset without a split of that
# many shots is passed over) may be set. Evaluation data stays outside the repository.
set -euo pipefail
out="${1:?usage: $0 OUT_DIR [EXTRA EVAL FLAGS...]}"
shift
gorag="${GORAG:-target/release/gorag}"
data="${DATA:-../shared/data}"
mkdir -p "$out"
for set in intents/hwu64 paper/wos paper/ifs_rel paper/reuters paper/cad; do
  for k in ${SHOTS:-1 5 10}; do
    [ -d "$data/$set/${k}shot" ] || continue
    name="$(basename "$set")-${k}shot"
    "$gorag" eval "$data/$set" --shots "$k" --llm none \
      --strategy hybrid,nearest,prototype,probe "$@" --out "$out/$name" >"$out/$name.log" 2>&1
    # The accuracy column of each strategy's four rounds.
    awk -v name="$name" 'NR > 2 && $2 ~ /^[1-4]$/ && $5 ~ /^[0-9.]+$/ { acc[$1] = acc[$1] " " $5 }
      /^acc:/ { exit } END { for (s in acc) print name, s, acc[s] }' "$out/$name.log" | sort
  done
done
