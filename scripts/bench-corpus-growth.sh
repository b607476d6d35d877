#!/usr/bin/env bash
# The engine's per-text cost, stage by stage, and its memory as the corpus grows: one process
# per corpus size (examples/corpus_growth.rs), the output in out/bench-corpus-growth/.
#
#   scripts/bench-corpus-growth.sh [sizes="1000 10000 50000 100000 150000"] [runs=2]
#
# The retrieval index is full from 40,000 texts on (`seen_capacity` + `tentative_capacity`),
# the keyword statistics from about 10,000 (`phrase_capacity`): past both, the cost must stay
# flat. Several runs per size: these machines are noisy, compare medians.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="${1:-1000 10000 50000 100000 150000}"
runs="${2:-2}"
target="${CARGO_TARGET_DIR:-target}"
out="out/bench-corpus-growth"
mkdir -p "$out"
cargo build --release --locked --example corpus_growth
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) · $(date -u +%FT%TZ) · sizes $sizes · runs $runs" >"$out/results.txt"
for run in $(seq "$runs"); do
  for size in $sizes; do
    echo "run $run, corpus $size" | tee -a "$out/results.txt"
    "$target/release/examples/corpus_growth" "$size" | tee -a "$out/results.txt"
  done
done
echo "written: $out/results.txt"
