#!/usr/bin/env bash
# cargo-deny on the dependency graph, with deny.toml's policy (docs/guide/deploy.md, "Supply
# chain"): licences, bans (duplicate majors warned) and sources always; advisories (RustSec)
# when the advisory database can be fetched, or a copy fetched in the last 90 days is on disk.
# cargo-deny is pinned and built once per machine from crates.io into $GORAG_HOME/tools.
#
#   scripts/deny.sh            # as scripts/test.sh runs it
#   GORAG_REQUIRE_ADVISORIES=1 scripts/deny.sh   # fail, not skip, when the database is missing
set -euo pipefail
cd "$(dirname "$0")/.."

GORAG_HOME="${GORAG_HOME:-$HOME/.cache/gorag}"
VERSION="0.20.2"
ROOT="$GORAG_HOME/tools/cargo-deny-$VERSION"
deny="$ROOT/bin/cargo-deny"
log() { echo "[deny] $*" >&2; }

if [ ! -x "$deny" ] || ! "$deny" --version 2>/dev/null | grep -q " $VERSION\$"; then
  log "installing cargo-deny $VERSION (cargo install --locked, once per machine: ~10 min on 2 cores)"
  cargo install cargo-deny --version "$VERSION" --locked --root "$ROOT" --quiet
fi

"$deny" check --hide-inclusion-graph licenses bans sources

# The advisory database is a git repository on GitHub; where GitHub cannot be reached, a copy
# at cargo-deny's own place (cargo deny fetch, on a machine that can) is used offline, and is
# refused when older than 90 days.
db_root="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs"
if "$deny" fetch db >/dev/null 2>&1; then
  "$deny" check advisories
elif compgen -G "$db_root/advisory-db-*/.git" >/dev/null; then
  log "the advisory database cannot be fetched: checking against the copy in $db_root"
  cargo fetch --locked --quiet
  "$deny" --offline check advisories
elif [ -n "${GORAG_REQUIRE_ADVISORIES:-}" ]; then
  log "advisories: no advisory database (fetch failed, none in $db_root)"
  exit 1
else
  log "advisories NOT CHECKED: the RustSec database cannot be fetched from here (no GitHub) and"
  log "no copy is in $db_root. Run scripts/deny.sh where GitHub is reachable. Known and accepted"
  log "(deny.toml [advisories] ignore): fxhash, instant (sled), paste (candle, tokenizers)."
fi
