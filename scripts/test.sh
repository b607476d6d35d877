#!/usr/bin/env bash
# The whole test suite, as CI runs it: format, lints, build, the local LLM server, every test.
#
#   scripts/test.sh
#
# The LLM server is installed (PyPI, sha256-verified) and started on 127.0.0.1:8080 if it is
# not already running, and stopped again at the end if this script started it.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== format and lints"
cargo fmt --check
cargo clippy --all-targets -- -D warnings

echo "== build (before the LLM server starts: builds slow it down)"
# Benchmarks are compile-checked by clippy above and run with `cargo bench`, not here.
cargo build --tests

echo "== local LLM server"
started_llm=0
if ! scripts/llm.sh status; then
  scripts/llm.sh start
  started_llm=1
fi
cleanup() { if [ "$started_llm" = 1 ]; then scripts/llm.sh stop; fi; }
trap cleanup EXIT

echo "== tests"
cargo test
