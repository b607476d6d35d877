#!/usr/bin/env bash
# Restart and recovery time of `gorag serve` as a function of graph size.
#
#   scripts/bench-restart.sh [sizes="2000 10000 40000"]
#
# For each size: a service (graph-only, no LLM) learns from that many synthetic texts and stops
# (SIGTERM: snapshot). Then, measured from process start to "serving" (state loaded, changelog
# applied, labels synced): (a) a restart from its own snapshot, (b) a fresh replica rebuilding
# from the changelog alone. Results: out/bench-restart/results.csv.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="${1:-2000 10000 40000}"
target="${CARGO_TARGET_DIR:-target}"
gorag="$target/release/gorag"
out="out/bench-restart"
mkdir -p "$out"
cargo build --release --locked --bin gorag
# The default sentence encoder (the embedding signal; fetched once, sha256-verified).
scripts/embedding-model.sh potion-base-8M >/dev/null
scripts/kafka.sh start

echo "texts,graph_nodes,changelog_records,restart_from_snapshot_s,rebuild_from_changelog_s" >"$out/results.csv"
for size in $sizes; do
  name="restart-$size-$(date +%s)"
  sets=(--set "topics.labels=$name.labels" --set "topics.texts=$name.texts"
        --set "topics.predictions=$name.predictions" --set "topics.hallucinations=$name.hallucinations"
        --set "topics.dead_letter=$name.dlq" --set "topics.changelog=$name.changelog"
        --set "kafka.group_id=$name" --set "llm.url=none" --set "admin.listen=127.0.0.1:0")
  # Start a service on a state dir and wait until it serves; sets serve_pid and elapsed
  # (seconds from start to "serving").
  start_serving() {
    local state="$1" log="$2" t0
    t0=$(date +%s.%N)
    GORAG_LOG_FORMAT=text "$gorag" serve "${sets[@]}" --set "state.dir=$state" >"$log" 2>&1 &
    serve_pid=$!
    until grep -q "serving" "$log"; do
      kill -0 "$serve_pid" 2>/dev/null || { cat "$log"; exit 1; }
      sleep 0.02
    done
    elapsed=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$t0" "$(date +%s.%N)")
  }
  stop_serving() { kill -TERM "$serve_pid"; wait "$serve_pid" || true; }

  rm -rf "$out/state-$size" "$out/fresh-$size"
  start_serving "$out/state-$size" "$out/learn-$size.log"
  "$gorag" publish --topic "$name.labels" examples/stream/round-1.jsonl 2>/dev/null
  python3 - "$size" >"$out/texts-$size.jsonl" <<'PY'
import json, random, sys
random.seed(5)
base = ("parcel tracking courier delivery invoice charged card refund payment password login "
        "account locked email reset order").split()
for i in range(int(sys.argv[1])):
    words = [random.choice(base) for _ in range(15)] + [f"w{random.randrange(10**7)}" for _ in range(5)]
    print(json.dumps({"id": f"r{i:07d}", "text": " ".join(words)}))
PY
  "$gorag" publish --topic "$name.texts" "$out/texts-$size.jsonl" 2>/dev/null
  "$gorag" tail --topic "$name.predictions" --from-beginning --count "$size" --idle-timeout 600 >/dev/null
  sleep 2   # let the last learn records be applied
  stop_serving
  nodes=$("$gorag" state --dir "$out/state-$size" | python3 -c "import json,sys; print(json.load(sys.stdin)['graph_nodes'])")
  records=$("$gorag" state --dir "$out/state-$size" | python3 -c "import json,sys; d=json.load(sys.stdin); print(next(o['next_offset'] for o in d['offsets'] if o['topic'].endswith('.changelog')))")

  start_serving "$out/state-$size" "$out/restart-$size.log"
  restart=$elapsed
  stop_serving
  start_serving "$out/fresh-$size" "$out/rebuild-$size.log"
  rebuild=$elapsed
  stop_serving
  echo "$size,$nodes,$records,$restart,$rebuild" | tee -a "$out/results.csv"
done
