#!/usr/bin/env bash
# Local Kafka-protocol broker (nisshi) for development and tests.
#
#   scripts/kafka.sh install   # cargo install nisshi 0.8.1 (≈12 min once per machine; skipped
#                              # when `nisshi --version` already prints 0.8.1)
#   scripts/kafka.sh start     # start on 127.0.0.1:$GORAG_KAFKA_PORT (default 9092), wait for it
#   scripts/kafka.sh stop
#   scripts/kafka.sh status    # exit 0 when the port accepts connections
#
# Storage is in memory: a broker restart loses every topic. The broker always binds loopback.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
RUN_DIR="$GORAG_HOME/kafka"
PORT="${GORAG_KAFKA_PORT:-9092}"
VERSION="0.8.1"

log() { echo "[kafka] $*" >&2; }

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

cmd_install() {
  if command -v nisshi >/dev/null && [ "$(nisshi --version 2>/dev/null)" = "nisshi $VERSION" ]; then
    log "nisshi $VERSION already installed"
    return
  fi
  log "building nisshi $VERSION (about 12 minutes, once per machine)"
  # --ignore-rust-version: a dependency declares a newer Rust than the toolchain; it builds.
  cargo install nisshi --version "$VERSION" --locked --ignore-rust-version \
    --no-default-features --features dynostore
}

cmd_start() {
  cmd_install
  if listening; then
    log "already listening on 127.0.0.1:$PORT"
    return
  fi
  mkdir -p "$RUN_DIR"
  nohup nisshi broker \
    --listener-url "tcp://127.0.0.1:$PORT" \
    --advertised-listener-url "tcp://127.0.0.1:$PORT" \
    --storage-engine memory://nisshi/ \
    --group-initial-rebalance-delay 0s >"$RUN_DIR/broker-$PORT.log" 2>&1 &
  echo $! >"$RUN_DIR/broker-$PORT.pid"
  wait_ready kafka "$RUN_DIR/broker-$PORT.pid" "$RUN_DIR/broker-$PORT.log" 100 0.1 listening
  log "ready: 127.0.0.1:$PORT"
}

cmd_stop() { stop_pidfile kafka "$RUN_DIR/broker-$PORT.pid"; }

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) listening ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
