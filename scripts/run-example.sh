#!/usr/bin/env bash
# Installs examples/sqlite-platform the way a project outside this workspace would, and runs it:
# the example and the packed tarballs (./platform pack, run first) are copied to a temporary
# directory (so nothing resolves from the workspace's node_modules), `npm install` there takes
# @model-platform/* from the tarballs and the rest from the npm registry, then the example is
# type-checked against the packed .d.ts, its tests run and its demo runs, on the pinned Node 22
# (node:sqlite needs 22).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE22="$("$ROOT/platform" node -p process.execPath)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/dist" "$WORK/examples"
cp -r "$ROOT/dist/packages" "$WORK/dist/packages"
(cd "$ROOT/examples" && tar cf - --exclude node_modules --exclude package-lock.json sqlite-platform) | (cd "$WORK/examples" && tar xf -)
cd "$WORK/examples/sqlite-platform"
# npm runs on the pinned Node too (the machine's may be 20).
export PATH="$(dirname "$NODE22"):$PATH"
# node:sqlite is stable in use but still flagged experimental on 22: one warning per process is noise.
export NODE_OPTIONS="--disable-warning=ExperimentalWarning"
npm install --no-audit --no-fund --loglevel=error
"$NODE22" node_modules/typescript/bin/tsc --noEmit -p tsconfig.json
"$NODE22" node_modules/vitest/vitest.mjs run
"$NODE22" src/demo.ts
