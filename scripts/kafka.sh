#!/usr/bin/env bash
# Local Kafka-protocol broker (nisshi) for development and tests.
#
#   scripts/kafka.sh install   # cargo install nisshi 0.8.1 with its memory, SQLite and PostgreSQL
#                              # engines into $GORAG_HOME (15–30 min once per machine; skipped when
#                              # that build is already there)
#   scripts/kafka.sh bin       # print the path of that nisshi binary (tests read $GORAG_NISSHI)
#   scripts/kafka.sh start     # start on 127.0.0.1:$GORAG_KAFKA_PORT (default 9092), wait for it
#   scripts/kafka.sh stop
#   scripts/kafka.sh status    # exit 0 when the port accepts connections
#
# Storage: $GORAG_KAFKA_STORAGE, default memory://nisshi/ (fast; a broker restart loses every
# topic). For a broker that keeps its log across restarts use e.g.
# GORAG_KAFKA_STORAGE=sqlite://nisshi.db (a file in $GORAG_HOME/kafka) or a postgres:// URL.
# The broker always binds loopback.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
RUN_DIR="$GORAG_HOME/kafka"
PORT="${GORAG_KAFKA_PORT:-9092}"
VERSION="0.8.1"
FEATURES="dynostore,libsql,postgres"
NISSHI_ROOT="$GORAG_HOME/nisshi-$VERSION-${FEATURES//,/-}"
NISSHI="$NISSHI_ROOT/bin/nisshi"
STORAGE="${GORAG_KAFKA_STORAGE:-memory://nisshi/}"

log() { echo "[kafka] $*" >&2; }

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

cmd_install() {
  if [ -x "$NISSHI" ] && [ "$("$NISSHI" --version 2>/dev/null)" = "nisshi $VERSION" ]; then
    log "nisshi $VERSION ($FEATURES) already installed"
    return
  fi
  log "building nisshi $VERSION with $FEATURES (15 to 30 minutes, once per machine)"
  # --ignore-rust-version: a dependency declares a newer Rust than the toolchain; it builds.
  # Its own target dir: the project's shared one would be polluted with the broker's build.
  CARGO_TARGET_DIR="$GORAG_HOME/nisshi-build" cargo install nisshi --version "$VERSION" \
    --locked --ignore-rust-version --no-default-features --features "$FEATURES" \
    --root "$NISSHI_ROOT"
}

cmd_start() {
  cmd_install
  if listening; then
    log "already listening on 127.0.0.1:$PORT"
    return
  fi
  mkdir -p "$RUN_DIR"
  cd "$RUN_DIR" # a sqlite:// storage file is relative to the working directory
  nohup "$NISSHI" broker \
    --listener-url "tcp://127.0.0.1:$PORT" \
    --advertised-listener-url "tcp://127.0.0.1:$PORT" \
    --storage-engine "$STORAGE" \
    --group-initial-rebalance-delay 0s >"$RUN_DIR/broker-$PORT.log" 2>&1 &
  echo $! >"$RUN_DIR/broker-$PORT.pid"
  wait_ready kafka "$RUN_DIR/broker-$PORT.pid" "$RUN_DIR/broker-$PORT.log" 100 0.1 listening
  log "ready: 127.0.0.1:$PORT"
}

cmd_stop() { stop_pidfile kafka "$RUN_DIR/broker-$PORT.pid"; }

case "${1:-}" in
  install) cmd_install ;;
  bin) echo "$NISSHI" ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) listening ;;
  *) echo "usage: $0 install|bin|start|stop|status" >&2; exit 2 ;;
esac
