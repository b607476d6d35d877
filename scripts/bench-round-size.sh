#!/usr/bin/env bash
# Applying one round of N synthetic labels to a fresh state (State::apply, as gorag serve and
# gorag classify apply one): its time and peak memory, one
# process per size (examples/round_size.rs), the output in out/bench-round-size/. The time alone
# is also a criterion benchmark: cargo bench --bench round_size.
#
#   scripts/bench-round-size.sh [sizes="1000 10000 50000"] [runs=2] [--no-refit] [--embedding]
#
# --no-refit: `refit_confidence` off, so no held-out scoring of the round's examples (the
# indexing alone). --embedding: the embedding signal on with the default encoder, as the
# service runs by default (scripts/embedding-model.sh fetches it).
#
# Peak memory is the process's (VmHWM, and /usr/bin/time's maximum resident set size when it is
# installed): the round's labels themselves are in it. These machines are noisy: compare medians.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="${1:-1000 10000 50000}"
runs="${2:-2}"
flags=("${@:3}")
target="${CARGO_TARGET_DIR:-target}"
out="out/bench-round-size"
mkdir -p "$out"
cargo build --release --locked --example round_size
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) · $(date -u +%FT%TZ) · sizes $sizes · runs $runs ${flags[*]:-}" >"$out/results.txt"
for run in $(seq "$runs"); do
  for size in $sizes; do
    echo "run $run, labels $size" | tee -a "$out/results.txt"
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -f '{"max_rss_kb": %M, "wall_s": %e}' "$target/release/examples/round_size" "$size" ${flags[@]+"${flags[@]}"} 2>&1 |
        tee -a "$out/results.txt"
    else
      "$target/release/examples/round_size" "$size" ${flags[@]+"${flags[@]}"} | tee -a "$out/results.txt"
    fi
  done
done
echo "written: $out/results.txt"
