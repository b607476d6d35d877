#!/usr/bin/env bash
# The fault suite (tests/fault_suite.rs), two scenarios, loopback only, a few minutes each:
# - fault_suite: two replicas under a sustained stream on the local broker, SIGKILLs at seeded
#   random moments, a misbehaving LLM endpoint on a fixed schedule, bad input of every kind (10 MB
#   texts included), a round mid-stream;
# - broker_restart: two replicas under a sustained stream while their broker (its own, SQLite
#   storage) is stopped cleanly once and killed once, a few seconds down each time.
#
#   scripts/fault-suite.sh [texts=3000] [kills=6]
#
# Prints and writes out/fault-suite/summary.json and broker-restart.json: faults injected, texts
# sent, predictions received, lost (must be 0), replica digests (must be equal).
set -euo pipefail
cd "$(dirname "$0")/.."
export FAULT_SUITE_TEXTS="${1:-3000}" FAULT_SUITE_KILLS="${2:-6}"
scripts/kafka.sh start
scripts/embedding-model.sh potion-base-8M >/dev/null   # the default sentence encoder
GORAG_NISSHI="$(scripts/kafka.sh bin)"
export GORAG_NISSHI
cargo test --release --test fault_suite -- --ignored --nocapture --test-threads 1
