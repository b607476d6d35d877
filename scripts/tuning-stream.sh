#!/usr/bin/env bash
# A tuning stream for one of the paper's datasets, built only from texts that are not test
# texts, so the ranked strategies' parameters can be tuned without looking at test.tsv.
#
#   scripts/tuning-stream.sh ../shared/data/paper/wos out/wos-dev
#   gorag eval out/wos-dev --held-out dev --llm none --strategy ranked,hybrid
#
# For each round and shot count k (1, 5 and, where the dataset has it, 10): train.tsv is the
# k-shot train file; dev.tsv is the k-shot dev file, the other shot counts' dev files and the
# other shot counts' train texts that are not in this train file, less any text of any test
# file, deduplicated and shuffled with a fixed seed. Before 10-shot splits were added, the
# streams used 1- and 5-shot alone; with them, every stream below a 10-shot one is longer. WOS has dev files (32–53 texts a round at 1-shot); Reuters and IFS-Rel have none, so
# their streams are the other shot count's train texts alone (Reuters 1-shot: 124 texts, none
# at 5-shot — its 5-shot train files hold every 1-shot one; IFS-Rel 320 at 1-shot, 64 at
# 5-shot). A shot count with no tuning text at some round is not written. The result stays
# outside the repository (evaluation data).
set -euo pipefail
src="${1:?usage: $0 DATASET_DIR OUT_DIR}"
out="${2:?usage: $0 DATASET_DIR OUT_DIR}"
python3 - "$src" "$out" <<'PY'
import os, random, shutil, sys
src, out = sys.argv[1], sys.argv[2]
def lines(path):
    return [l for l in open(path, encoding="utf-8").read().split("\n") if l.strip()] if os.path.exists(path) else []
def text(line):
    return line.split("\t", 1)[-1]
shots = [k for k in (1, 5, 10) if os.path.isdir(f"{src}/{k}shot")]
tests = {text(l) for k in shots for r in range(1, 5) for l in lines(f"{src}/{k}shot/r{r}/test.tsv")}
streams = {k: {} for k in shots}
for r in range(1, 5):
    train = {k: lines(f"{src}/{k}shot/r{r}/train.tsv") for k in shots}
    dev = {k: lines(f"{src}/{k}shot/r{r}/dev.tsv") for k in shots}
    for k in shots:
        own = {text(l) for l in train[k]}
        candidates = dev[k] + [l for o in shots if o != k for l in dev[o] + train[o] if text(l) not in own]
        stream = list(dict.fromkeys(l for l in candidates if text(l) not in tests))
        random.Random(r * 10 + k).shuffle(stream)
        streams[k][r] = (train[k], stream)
for k, rounds in streams.items():
    if not all(stream for _, stream in rounds.values()):
        print(f"{k}-shot: a round has no tuning text; not written")
        continue
    for r, (train, stream) in rounds.items():
        folder = f"{out}/{k}shot/r{r}"
        os.makedirs(folder, exist_ok=True)
        open(f"{folder}/train.tsv", "w", encoding="utf-8").write("\n".join(train) + "\n")
        open(f"{folder}/dev.tsv", "w", encoding="utf-8").write("\n".join(stream) + "\n")
        print(f"{k}-shot round {r}: {len(train)} labelled, {len(stream)} tuning texts")
for name in ("id2label.json", "taxonomy.txt"):
    if os.path.exists(f"{src}/{name}"):
        shutil.copy(f"{src}/{name}", f"{out}/{name}")
PY
