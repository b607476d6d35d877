#!/usr/bin/env bash
# The fault suite (tests/fault_suite.rs): two replicas under a sustained stream on the local
# broker, SIGKILLs at seeded random moments, a misbehaving LLM endpoint on a fixed schedule, bad
# input of every kind, a round mid-stream. Bounded: a few minutes. Loopback only.
#
#   scripts/fault-suite.sh [texts=3000] [kills=6]
#
# Prints and writes out/fault-suite/summary.json: faults injected, texts sent, predictions
# received, lost (must be 0), replica digests (must be equal).
set -euo pipefail
cd "$(dirname "$0")/.."
export FAULT_SUITE_TEXTS="${1:-3000}" FAULT_SUITE_KILLS="${2:-6}"
scripts/kafka.sh start
cargo test --release --test fault_suite -- --ignored --nocapture
