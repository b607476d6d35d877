#!/usr/bin/env bash
# Memory of `gorag serve` under a sustained stream (instant fake LLM, online indexing on).
#
#   scripts/bench-soak.sh [minutes=10] [texts_per_second=200] [vocabulary=fixed|growing]
#
# Publishes texts_per_second synthetic texts every second for `minutes`, samples the service's
# RSS, graph size and lag every 10 s into out/bench-soak/samples-<vocabulary>.csv, and prints the
# RSS of the first and last minute. `fixed`: texts drawn from a closed vocabulary, so the graph
# stops growing once every keyword has been seen and memory must level off. `growing`: three
# never-seen words per text, so the graph grows with every text (that is online indexing: the
# graph is the state) and memory grows with it, by a roughly constant amount per graph node.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes="${1:-10}"
rate="${2:-200}"
vocabulary="${3:-fixed}"
case "$vocabulary" in fixed | growing) ;; *) echo "vocabulary: fixed or growing" >&2; exit 2 ;; esac
target="${CARGO_TARGET_DIR:-target}"
gorag="$target/release/gorag"
out="out/bench-soak"
mkdir -p "$out"
rm -rf "$out/state"

cargo build --release --locked --bin gorag --example instant_llm
# The default sentence encoder (the embedding signal; fetched once, sha256-verified).
scripts/embedding-model.sh potion-base-8M >/dev/null
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

python3 - "$((minutes * 60 * rate))" "$vocabulary" >"$out/texts.jsonl" <<'PY'
import json, random, sys
random.seed(11)
growing = sys.argv[2] == "growing"
base = ("parcel tracking courier delivery address box warehouse late damaged invoice charged "
        "card refund payment bill duplicate vat statement password login account locked email "
        "reset sign code verify phone app order").split()
for i in range(int(sys.argv[1])):
    # with `growing`, a few new words per text keep the graph growing, as open-ended traffic does
    words = [random.choice(base) for _ in range(20)]
    if growing:
        words += [f"w{random.randrange(200000)}" for _ in range(3)]
    print(json.dumps({"id": f"s{i:07d}", "text": " ".join(words)}))
PY

samples="$out/samples-$vocabulary.csv"
echo "seconds,rss_kib,graph_nodes,in_flight,lag,service_cpu_s,broker_cpu_s" >"$samples"
broker_pid=$(cat "${GORAG_HOME:-$HOME/.cache/gorag}/kafka/broker-9092.pid" 2>/dev/null || echo 0)
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
sample() {
  local rss metrics nodes inflight lag
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$serve_pid/status")
  metrics=$(curl -s 127.0.0.1:9491/metrics)
  nodes=$(echo "$metrics" | awk '/^gorag_graph_nodes / {print $2}')
  inflight=$(echo "$metrics" | awk '/^gorag_in_flight / {print $2}')
  lag=$(echo "$metrics" | awk '/^gorag_consumer_lag/ {s += $2} END {print s + 0}')
  echo "$1,$rss,$nodes,$inflight,$lag,$(cpu_seconds "$serve_pid"),$(cpu_seconds "$broker_pid")" >>"$samples"
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
python3 - "$samples" "$vocabulary" "$rate" <<'PY' | tee "$out/summary-$vocabulary.txt"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
mib = lambda rs: sum(int(r["rss_kib"]) for r in rs) / len(rs) / 1024
minute = lambda m: [r for r in rows if m * 60 <= int(r["seconds"]) < (m + 1) * 60] or rows[-1:]
last = rows[-6:]
nodes = lambda rs: int(rs[-1]["graph_nodes"] or 0)
print(f"{sys.argv[2]} vocabulary, {sys.argv[3]} texts/s, {int(rows[-1]['seconds']) // 60} min: "
      f"RSS minute 1 {mib(minute(0)):.1f} MiB, minute 2 {mib(minute(1)):.1f} MiB, last minute "
      f"{mib(last):.1f} MiB; graph nodes {nodes(minute(0))} -> {nodes(minute(1))} -> {nodes(last)}; "
      f"final lag {rows[-1]['lag']}")
cpu = lambda rs, col: float(rs[-1][col]) - float(rs[0][col])
first_half, second_half = rows[: len(rows) // 2 + 1], rows[len(rows) // 2 :]
print(f"  CPU seconds, first half / second half: service {cpu(first_half, 'service_cpu_s'):.0f} / "
      f"{cpu(second_half, 'service_cpu_s'):.0f}, broker {cpu(first_half, 'broker_cpu_s'):.0f} / "
      f"{cpu(second_half, 'broker_cpu_s'):.0f}")
grown = nodes(last) - nodes(minute(1))
if grown > 1000:
    print(f"  {(mib(last) - mib(minute(1))) * 1024 * 1024 / grown:.0f} bytes of RSS per graph node added after minute 2")
PY
