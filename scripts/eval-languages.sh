#!/usr/bin/env bash
# Tickets in German, Spanish and French against a shop's English tags
# (examples/languages/tickets.csv, examples/out-of-scope/shop-labels.csv): the same 32 tickets
# in each language, classified with `gorag classify` (retrieval only, 1 example a tag), once
# per sentence encoder. Prints, per encoder and language: accuracy, the share published
# decided and how often those were right, the share published with no label.
#
#   scripts/eval-languages.sh                                   # potion-base-8M and multilingual-e5-small
#   scripts/eval-languages.sh none potion-base-8M               # the encoders to compare
#
# Needs a built gorag (GORAG, else $CARGO_TARGET_DIR/release/gorag, else target/release/gorag);
# fetches each named encoder with scripts/embedding-model.sh. Figures:
# docs/results/2026-11-28-languages.md.
set -euo pipefail
cd "$(dirname "$0")/.."

GORAG="${GORAG:-${CARGO_TARGET_DIR:-target}/release/gorag}"
[ -x "$GORAG" ] || { echo "no gorag binary at $GORAG (cargo build --release, or set GORAG)" >&2; exit 1; }
models=("$@")
[ "${#models[@]}" -gt 0 ] || models=(potion-base-8M multilingual-e5-small)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# One CSV per language (id, gold_label, text).
python3 - examples/languages/tickets.csv "$work" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
for lang in sorted({r["lang"] for r in rows}):
    with open(f"{sys.argv[2]}/{lang}.csv", "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["id", "gold_label", "text"])
        for r in rows:
            if r["lang"] == lang:
                out.writerow([r["id"], r["gold_label"], r["text"]])
PY

printf '%-22s %-4s %5s %8s %9s %9s %9s\n' encoder lang texts accuracy decided "dec.right" no_match
for model in "${models[@]}"; do
  [ "$model" = none ] || scripts/embedding-model.sh "$model" >/dev/null
  for lang in en de es fr; do
    "$GORAG" classify --labels examples/out-of-scope/shop-labels.csv --llm none \
      --set "engine.embedding_model=$model" --output jsonl "$work/$lang.csv" \
      >"$work/$model-$lang.jsonl" 2>"$work/$model-$lang.log" \
      || { cat "$work/$model-$lang.log" >&2; exit 1; }
    python3 - "$work/$model-$lang.jsonl" "$model" "$lang" <<'PY'
import json, sys
preds = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
n = len(preds)
right = sum(p["label"] == p["gold_label"] for p in preds)
decided = [p for p in preds if p["status"] == "decided"]
dec_right = sum(p["label"] == p["gold_label"] for p in decided)
no_match = sum(p["status"] == "no_match" for p in preds)
dec_acc = f"{dec_right / len(decided):.3f}" if decided else "-"
print(f"{sys.argv[2]:<22} {sys.argv[3]:<4} {n:>5} {right / n:>8.3f} {len(decided) / n:>9.3f} "
      f"{dec_acc:>9} {no_match / n:>9.3f}")
PY
  done
done
