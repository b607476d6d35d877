#!/usr/bin/env bash
# A longer WOS tuning stream, built only from texts that are not test texts, so the ranked
# strategies' parameters can be tuned on more than 32–53 dev texts a round.
#
#   scripts/wos-dev-stream.sh ../shared/data/paper/wos out/wos-dev
#   gorag eval out/wos-dev --held-out dev --llm none --strategy ranked,hybrid
#
# For each round and shot count k: train.tsv is the k-shot train file; dev.tsv is the k-shot
# dev file, the other shot count's dev file and the other shot count's train texts that are not
# in this train file, deduplicated and shuffled with a fixed seed. (The 1- and 5-shot dev, train
# and test files of the public split are disjoint.) The result stays outside the repository.
set -euo pipefail
src="${1:?usage: $0 WOS_DIR OUT_DIR}"
out="${2:?usage: $0 WOS_DIR OUT_DIR}"
python3 - "$src" "$out" <<'PY'
import os, random, sys
src, out = sys.argv[1], sys.argv[2]
def lines(path):
    return [l for l in open(path, encoding="utf-8").read().split("\n") if l.strip()] if os.path.exists(path) else []
for r in range(1, 5):
    train = {k: lines(f"{src}/{k}shot/r{r}/train.tsv") for k in (1, 5)}
    dev = {k: lines(f"{src}/{k}shot/r{r}/dev.tsv") for k in (1, 5)}
    for k, other in ((1, 5), (5, 1)):
        own = set(train[k])
        stream = list(dict.fromkeys(dev[k] + dev[other] + [t for t in train[other] if t not in own]))
        random.Random(r * 10 + k).shuffle(stream)
        folder = f"{out}/{k}shot/r{r}"
        os.makedirs(folder, exist_ok=True)
        open(f"{folder}/train.tsv", "w", encoding="utf-8").write("\n".join(train[k]) + "\n")
        open(f"{folder}/dev.tsv", "w", encoding="utf-8").write("\n".join(stream) + "\n")
        print(f"{k}-shot round {r}: {len(train[k])} labelled, {len(stream)} tuning texts")
PY
