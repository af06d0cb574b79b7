#!/usr/bin/env node
// Prints, one a line and relative to the checkout, the node_modules folders that the built
// daemon and gpu-check need at run time: the package.json's dependencies that core/ imports and
// everything they depend on (dependencies and optionalDependencies, resolved as Node resolves
// them: the nearest node_modules upward). node-llama-cpp's prebuilt binaries
// (@node-llama-cpp/*) are left out: pack-for-device.sh takes the two it wants by hand.
//
//   node scripts/gpu-check/runtime-closure.mjs
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** What core/ imports at run time: react, react-dom and zustand are the dashboard's, bundled by vite. */
const STARTS = ['@huggingface/hub', 'node-llama-cpp', 'systeminformation', 'yaml', 'zod'];

function resolvePackage(fromDir, name) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === dirname(dir)) return null;
  }
}

const seen = new Set();
function visit(dir, optional) {
  if (seen.has(dir)) return;
  seen.add(dir);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const wanted = [...Object.keys(pkg.dependencies ?? {}).map((n) => [n, false]), ...Object.keys(pkg.optionalDependencies ?? {}).map((n) => [n, true])];
  for (const [name, isOptional] of wanted) {
    if (name.startsWith('@node-llama-cpp/')) continue;
    const found = resolvePackage(dir, name);
    if (found !== null) visit(found, isOptional);
    else if (!isOptional && !optional) throw new Error(`${relative(root, dir)} depends on ${name}, which is not installed: run npm ci`);
  }
}

for (const name of STARTS) {
  const found = resolvePackage(root, name);
  if (found === null) throw new Error(`${name} is not installed: run npm ci`);
  visit(found, false);
}
for (const dir of [...seen].sort()) console.log(relative(root, dir));
