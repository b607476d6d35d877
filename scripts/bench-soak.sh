#!/usr/bin/env bash
# Memory of `gorag serve` under a sustained stream (instant fake LLM, online indexing on).
#
#   scripts/bench-soak.sh [minutes=10] [texts_per_second=200]
#
# Publishes texts_per_second synthetic texts every second for `minutes`, samples the service's
# RSS, graph size and lag every 10 s into out/bench-soak/samples.csv, and prints the RSS of the
# first and last minute. The graph grows with every new keyword (that is online indexing); the
# rest of the memory must not.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes="${1:-10}"
rate="${2:-200}"
target="${CARGO_TARGET_DIR:-target}"
gorag="$target/release/gorag"
out="out/bench-soak"
mkdir -p "$out"
rm -rf "$out/state"

cargo build --release --locked --bin gorag --example instant_llm
scripts/kafka.sh start
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
"$target/release/examples/instant_llm" >"$out/llm.url" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$out/llm.url" ] && break; sleep 0.1; done

name="soak-$(date +%s)"
GORAG_LOG_FORMAT=text "$gorag" serve --set "topics.labels=$name.labels" --set "topics.texts=$name.texts" \
  --set "topics.predictions=$name.predictions" --set "topics.hallucinations=$name.hallucinations" \
  --set "topics.dead_letter=$name.dlq" --set "topics.changelog=$name.changelog" \
  --set "kafka.group_id=$name" --set "state.dir=$out/state" --set "llm.url=$(cat "$out/llm.url")" \
  --set "input.max_in_flight=32" --set "llm.concurrency=8" --set "admin.listen=127.0.0.1:9491" \
  >"$out/serve.log" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 600); do grep -q "serving" "$out/serve.log" && break; sleep 0.1; done
"$gorag" publish --topic "$name.labels" examples/stream/round-1.jsonl 2>/dev/null

python3 - "$((minutes * 60 * rate))" >"$out/texts.jsonl" <<'PY'
import json, random, sys
random.seed(11)
base = ("parcel tracking courier delivery address box warehouse late damaged invoice charged "
        "card refund payment bill duplicate vat statement password login account locked email "
        "reset sign code verify phone app order").split()
for i in range(int(sys.argv[1])):
    # a few new words per text keep the graph growing, as real traffic does
    words = [random.choice(base) for _ in range(20)] + [f"w{random.randrange(200000)}" for _ in range(3)]
    print(json.dumps({"id": f"s{i:07d}", "text": " ".join(words)}))
PY

echo "seconds,rss_kib,graph_nodes,in_flight,lag" >"$out/samples.csv"
sample() {
  local rss metrics nodes inflight lag
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$serve_pid/status")
  metrics=$(curl -s 127.0.0.1:9491/metrics)
  nodes=$(echo "$metrics" | awk '/^gorag_graph_nodes / {print $2}')
  inflight=$(echo "$metrics" | awk '/^gorag_in_flight / {print $2}')
  lag=$(echo "$metrics" | awk '/^gorag_consumer_lag/ {s += $2} END {print s + 0}')
  echo "$1,$rss,$nodes,$inflight,$lag" >>"$out/samples.csv"
}
start=$(date +%s)
for second in $(seq 0 $((minutes * 60 - 1))); do
  sed -n "$((second * rate + 1)),$(((second + 1) * rate))p" "$out/texts.jsonl" \
    | "$gorag" publish --topic "$name.texts" - 2>/dev/null
  if [ $((second % 10)) = 0 ]; then sample "$second"; fi
  sleep_until=$((start + second + 1))
  now=$(date +%s)
  if [ "$now" -lt "$sleep_until" ]; then sleep $((sleep_until - now)); fi
done
sample "$((minutes * 60))"
kill -TERM "$serve_pid"
wait "$serve_pid" || true
python3 - "$out/samples.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first = [int(r["rss_kib"]) for r in rows[:6]]
last = [int(r["rss_kib"]) for r in rows[-6:]]
print(f"RSS first minute {sum(first)/len(first)/1024:.1f} MiB, last minute {sum(last)/len(last)/1024:.1f} MiB; "
      f"graph nodes {rows[0]['graph_nodes']} -> {rows[-1]['graph_nodes']}; final lag {rows[-1]['lag']}")
PY
