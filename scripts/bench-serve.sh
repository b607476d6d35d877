#!/usr/bin/env bash
# End-to-end throughput and latency of `gorag serve` on the local broker.
#
#   scripts/bench-serve.sh instant [texts=5000] [runs=3] [instances=1]   # instant fake LLM (examples/instant_llm.rs)
#   scripts/bench-serve.sh slow    [texts=2000] [runs=3] [instances=1]   # fake LLM answering in 50 ms, 4 calls at once per instance
#   scripts/bench-serve.sh real    [texts=40]   [runs=1] [instances=1]   # the local Qwen model (scripts/llm.sh)
#
# BENCH_IN_FLIGHT overrides the instant mode's intake (32); BENCH_EXTRA adds `--set key=value`
# flags to every instance. BENCH_DATASET=DIR (a `gorag eval` dataset folder, e.g.
# ../shared/data/intents/hwu64) runs a real stream instead of synthetic tickets: its rounds of
# BENCH_SHOTS (5) shots are applied first, then its test texts (every round's, repeated with
# new ids up to `texts`) are published. Each instance's /metrics is saved as out/bench-serve/metrics-<run>-<n>.txt.
# With instances=2, two replicas share the texts (one consumer group, 4 partitions).
# Each run: a fresh service on topics of its own, round 1 of examples/stream applied (or the
# dataset's rounds), then `texts` synthetic texts (or the dataset's test texts) published at once
# (a backlog). Reported per run: texts/s from the
# first publish to the last prediction received, and the p50/p99 of each prediction's
# `latency.total_ms` (record taken in → outputs handed to the producer; excludes queueing in
# the backlog). Results: out/bench-serve/<mode>.json; the summary line gives the median run (a dataset run's file is named after the dataset).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-instant}"
texts="${2:-}"
runs="${3:-}"
instances="${4:-1}"
case "$mode" in
  instant) texts="${texts:-5000}"; runs="${runs:-3}"; in_flight="${BENCH_IN_FLIGHT:-32}"; llm_concurrency=16 ;;
  slow) texts="${texts:-2000}"; runs="${runs:-3}"; in_flight=8; llm_concurrency=4 ;;
  real) texts="${texts:-40}"; runs="${runs:-1}"; in_flight=8; llm_concurrency=2 ;;
  *) echo "usage: $0 instant|slow|real [texts] [runs] [instances]" >&2; exit 2 ;;
esac
target="${CARGO_TARGET_DIR:-target}"
gorag="$target/release/gorag"
out="out/bench-serve"
mkdir -p "$out"

cargo build --release --locked --bin gorag --example instant_llm --example bare_engine
# The default sentence encoder (the embedding signal; fetched once, sha256-verified).
scripts/embedding-model.sh potion-base-8M >/dev/null
scripts/kafka.sh start
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
if [ "$mode" != real ]; then
  delay_ms=0
  if [ "$mode" = slow ]; then delay_ms=50; fi
  "$target/release/examples/instant_llm" "$delay_ms" >"$out/instant_llm.url" &
  pids+=($!)
  for _ in $(seq 1 100); do [ -s "$out/instant_llm.url" ] && break; sleep 0.1; done
  llm_url="$(cat "$out/instant_llm.url")"
else
  scripts/llm.sh start
  llm_url="http://127.0.0.1:${GORAG_LLM_PORT:-8080}/v1"
fi

rounds="examples/stream/round-1.jsonl"
if [ -n "${BENCH_DATASET:-}" ]; then
  rounds="$out/rounds.jsonl"
  python3 - "$BENCH_DATASET" "${BENCH_SHOTS:-5}" "$texts" "$rounds" "$out/texts.jsonl" <<'PY'
import json, os, sys
root, shots, n, rounds_path, texts_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
folder = os.path.join(root, f"{shots}shot")
names = sorted(d for d in os.listdir(folder) if d.startswith("r") and d[1:].isdigit())
names.sort(key=lambda d: int(d[1:]))
def rows(path):
    # One `label<TAB>text` a line, as `gorag eval` reads it (the text may hold more tabs).
    with open(path, encoding="utf-8-sig") as f:
        pairs = (line.rstrip("\n").split("\t", 1) for line in f)
        return [(label.strip(), text) for label, text in (p for p in pairs if len(p) == 2)]
tests = []
with open(rounds_path, "w") as out:
    for name in names:
        examples = {}
        for label, text in rows(os.path.join(folder, name, "train.tsv")):
            examples.setdefault(label, []).append(text)
        labels = [{"id": l.replace(" ", "_"), "name": l, "examples": e} for l, e in examples.items()]
        out.write(json.dumps({"type": "round", "round": name, "labels": labels}) + "\n")
        tests += [text for _, text in rows(os.path.join(folder, name, "test.tsv"))]
with open(texts_path, "w") as out:
    for i in range(n):
        out.write(json.dumps({"id": f"b{i:06d}", "text": tests[i % len(tests)]}) + "\n")
PY
else
# Synthetic support tickets from the example round's vocabulary (deterministic).
python3 - "$texts" >"$out/texts.jsonl" <<'PY'
import json, random, sys
random.seed(7)
words = ("parcel tracking courier delivery address box warehouse late damaged invoice charged "
         "card refund payment bill duplicate vat statement password login account locked email "
         "reset sign code verify phone app order weekend neighbour bank please help since "
         "yesterday again customer service week").split()
for i in range(int(sys.argv[1])):
    print(json.dumps({"id": f"b{i:06d}", "text": " ".join(random.choice(words) for _ in range(30))}))
PY
fi
round_count=$(grep -c . "$rounds")

results=()
for run in $(seq 1 "$runs"); do
  name="bench-$mode-$(date +%s%N)"
  serve_pids=()
  for instance in $(seq 1 "$instances"); do
    rm -rf "$out/state-$run-$instance"
    GORAG_LOG_FORMAT=text "$gorag" serve --set "topics.labels=$name.labels" --set "topics.texts=$name.texts" \
      --set "topics.predictions=$name.predictions" --set "topics.hallucinations=$name.hallucinations" \
      --set "topics.dead_letter=$name.dlq" --set "topics.changelog=$name.changelog" \
      --set "kafka.group_id=$name" --set "kafka.partitions=4" \
      --set "state.dir=$out/state-$run-$instance" --set "llm.url=$llm_url" \
      --set "input.max_in_flight=$in_flight" --set "llm.concurrency=$llm_concurrency" \
      --set "admin.listen=127.0.0.1:0" ${BENCH_EXTRA:-} \
      >"$out/serve-$run-$instance.log" 2>&1 &
    serve_pids+=($!)
    pids+=($!)
    for _ in $(seq 1 600); do grep -q "serving" "$out/serve-$run-$instance.log" && break; sleep 0.1; done
  done
  # every replica has its partitions before the clock starts
  for instance in $(seq 1 "$instances"); do
    for _ in $(seq 1 600); do grep -q "partitions assigned" "$out/serve-$run-$instance.log" && break; sleep 0.1; done
  done
  sleep 1
  "$gorag" publish --topic "$name.labels" "$rounds" 2>/dev/null
  for _ in $(seq 1 1200); do
    [ "$(grep -c "label event applied" "$out/serve-$run-1.log")" -ge "$round_count" ] && break
    if grep -q "label event rejected" "$out/serve-$run-1.log"; then
      echo "a round was rejected: see $out/serve-$run-1.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  # The reader is up before the clock starts: its own start-up (≈ 0.1 s) is not the service's.
  "$gorag" tail --topic "$name.predictions" --from-beginning --count "$texts" --idle-timeout 600 \
    >"$out/predictions-$run.jsonl" &
  tail_pid=$!
  pids+=("$tail_pid")
  # The publisher too: its idempotent producer spends ≈ 0.5 s getting a producer id before it
  # sends anything (librdkafka retries that every 500 ms), which is not the service's time
  # either. It is started on a FIFO and the texts are written into it when the clock starts.
  fifo="$out/texts-$run.fifo"
  rm -f "$fifo"
  mkfifo "$fifo"
  exec 3<>"$fifo"
  "$gorag" publish --topic "$name.texts" - <"$fifo" 3>&- 2>/dev/null &
  publish_pid=$!
  pids+=("$publish_pid")
  sleep 1
  start=$(date +%s.%N)
  cat "$out/texts.jsonl" >&3
  exec 3>&-
  wait "$publish_pid"
  wait "$tail_pid"
  end=$(date +%s.%N)
  rm -f "$fifo"
  # Each instance's /metrics (per-stage latency histograms) before it stops.
  for instance in $(seq 1 "$instances"); do
    admin=$(grep -o 'admin port.*address=[0-9.:]*' "$out/serve-$run-$instance.log" | head -1 | sed 's/.*address=//')
    curl -sf "http://$admin/metrics" >"$out/metrics-$run-$instance.txt" || true
  done
  for pid in "${serve_pids[@]}"; do kill -TERM "$pid"; done
  for pid in "${serve_pids[@]}"; do wait "$pid" || true; done
  result=$(python3 - "$out/predictions-$run.jsonl" "$start" "$end" "$texts" "$instances" <<'PY'
import json, statistics, sys
path, start, end, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
lat = sorted(json.loads(l)["latency"]["total_ms"] for l in open(path) if l.strip())
def pct(p): return lat[min(len(lat) - 1, int(p * len(lat)))]
print(json.dumps({"instances": int(sys.argv[5]), "texts": n, "received": len(lat), "seconds": round(end - start, 3),
                  "texts_per_s": round(n / (end - start), 1),
                  "latency_ms_p50": round(pct(0.50), 2), "latency_ms_p99": round(pct(0.99), 2)}))
PY
)
  echo "run $run: $result"
  results+=("$result")
done
# The bare engine as many times as the service ran: its own speed varies by ±25 % from run to
# run here, so the ratio is of the two medians.
bares=()
for run in $(seq 1 "$runs"); do
  one=$("$target/release/examples/bare_engine" "$out/texts.jsonl" "$rounds")
  echo "bare engine, same texts, one thread, run $run: $one"
  bares+=("$one")
done
bare=$(printf '%s\n' "${bares[@]}" | python3 -c '
import json, sys
runs = sorted((json.loads(l) for l in sys.stdin if l.strip()), key=lambda r: r["texts_per_s"])
print(json.dumps(runs[len(runs) // 2]))')
printf '%s\n' "${results[@]}" | BARE="$bare" python3 -c '
import json, sys
mode, path = sys.argv[1], sys.argv[2]
runs = [json.loads(l) for l in sys.stdin if l.strip()]
median = sorted(runs, key=lambda r: r["texts_per_s"])[len(runs) // 2]
import os
bare = json.loads(os.environ["BARE"])
json.dump({"mode": mode, "runs": runs, "median_run": median, "bare_engine": bare}, open(path, "w"), indent=2)
m = median
print("%s: median of %d run(s): %s texts/s, latency p50 %s ms, p99 %s ms (%d texts) -> %s"
      % (mode, len(runs), m["texts_per_s"], m["latency_ms_p50"], m["latency_ms_p99"], m["texts"], path))
print("bare engine (median run) %.1f texts/s; service / bare engine = %.2f"
      % (bare["texts_per_s"], m["texts_per_s"] / bare["texts_per_s"]))
' "$mode" "$out/$mode${BENCH_DATASET:+-$(basename "$BENCH_DATASET")}-x$instances.json"
