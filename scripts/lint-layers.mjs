#!/usr/bin/env node
// Layering lint: keeps the dependency arrows of DESIGN.md pointing one way.
//
// Why a small script and not eslint's import plugins: the rules are few and about folders,
// not style, and typescript-eslint cannot parse with TypeScript 7. A regex over import
// specifiers is enough because every import in this codebase is a static `import`/`export
// from` or a dynamic `import('...')` with a literal, and the script fails loudly on any file
// it cannot read.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep, posix, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const NODE_BUILTIN = /^node:|^(fs|path|os|child_process|http|https|net|url|events|stream|crypto|util|worker_threads|process|timers)(\/|$)/;

/** Every import specifier in a source text. */
export function importsOf(source) {
  const found = [];
  const staticImport = /^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
  for (const m of source.matchAll(staticImport)) found.push(m[1]);
  const dynamicImport = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const m of source.matchAll(dynamicImport)) found.push(m[1]);
  return found;
}

/** Resolves a relative specifier to a repo-relative posix path; bare specifiers stay as they are. */
function target(fromFile, spec) {
  if (!spec.startsWith('.')) return spec;
  return posix.normalize(posix.join(posix.dirname(fromFile), spec));
}

/**
 * The rules. `file` is repo-relative with forward slashes.
 * Returns a list of sentences, one per violation, naming the file and the import.
 */
export function violations(file, source) {
  const out = [];
  for (const spec of importsOf(source)) {
    const to = target(file, spec);
    const say = (why) => out.push(`${file}: imports '${spec}' — ${why}`);
    // core/contracts is the bottom layer: the words every other layer shares (the snapshot, the
    // events, the launch levels and failure kinds, formatBytes), importing nothing. core/policy
    // decides in those words, so it may import them and nothing else. One way: a contract that
    // reached back into the policy would make the two one tangle (it used to, for LaunchLevel,
    // and re-exported formatBytes from the policy so the renderer could have it).
    const pure = file.startsWith('core/policy/') || file.startsWith('core/contracts/');
    if (pure) {
      if (!spec.startsWith('.')) say('core/policy and core/contracts must not import packages, Node, Electron or React');
      else if (file.startsWith('core/policy/') && !(to.startsWith('core/policy/') || to.startsWith('core/contracts/'))) say('core/policy depends on nothing but core/contracts');
      else if (file.startsWith('core/contracts/') && !to.startsWith('core/contracts/')) say('core/contracts imports nothing outside itself');
    }
    // core/admin-client is the admin API's client (HTTP calls, the event stream's reader) that the
    // CLI and the browser's dashboard share: it runs in a browser, so no package and no Node, and
    // it speaks in core/contracts' words only.
    if (file.startsWith('core/admin-client/')) {
      if (!spec.startsWith('.')) say('core/admin-client runs in a browser too: no packages, Node, Electron or React');
      else if (!(to.startsWith('core/admin-client/') || to.startsWith('core/contracts/'))) say('core/admin-client depends on nothing but core/contracts');
    }
    // core/daemon.ts and core/daemon/ are the composition root: they make and wire the parts, and
    // no part below imports them back (the CLI, which starts the daemon or finds a running one,
    // sits above it). core/demand holds the request side's decisions the root wires between the
    // router, the controller and the supervisor: only the root imports it, and it never the root.
    const isRoot = file === 'core/daemon.ts' || file.startsWith('core/daemon/');
    const toRoot = to === 'core/daemon.js' || to === 'core/daemon.ts' || to.startsWith('core/daemon/');
    const startsDaemon = isRoot || file === 'core/cli.ts' || file.startsWith('core/cli/');
    if (file.startsWith('core/') && toRoot && !startsDaemon) say('core/daemon is the composition root: only it and the CLI import it');
    if (file.startsWith('core/') && to.startsWith('core/demand/') && !isRoot && !file.startsWith('core/demand/')) say('core/demand is wired by the composition root: only core/daemon.ts and core/daemon/ import it');
    if (file.startsWith('core/') && (spec === 'electron' || spec.startsWith('electron/'))) say('nothing under core/ may import electron');
    // node-llama-cpp costs ~40 MB of memory in any process that loads it; only the embedded
    // engine's own process needs it (the catalog reads GGUF headers with core/catalog/gguf-reader.ts).
    if (/^(core|electron)\//.test(file) && !file.startsWith('core/engine/embedded/') && (spec === 'node-llama-cpp' || spec.startsWith('node-llama-cpp/'))) {
      say('only the embedded engine (core/engine/embedded) may import node-llama-cpp');
    }
    if (file.startsWith('renderer/')) {
      // Its tests live under test/renderer (they run in Node: a real loopback server for the HTTP bridge); the app itself runs in a browser.
      if (NODE_BUILTIN.test(spec)) say('the renderer runs in a browser: no Node built-ins');
      if (spec === 'electron') say('the renderer talks to main through the preload bridge only');
      // DESIGN: the renderer imports from core/contracts (types, and the few pure helpers it
      // re-exports) and the admin API's client (core/admin-client, its HTTP bridge's calls and
      // event stream), never runtime code from elsewhere in core/.
      if (to.startsWith('core/') && !to.startsWith('core/contracts/') && !to.startsWith('core/admin-client/')) say('the renderer may import only from core/contracts and core/admin-client');
      if (to.startsWith('electron/')) say('the renderer must not import electron/ code');
    }
  }
  return out;
}

/** The visible state words, as core/contracts/model-status.ts lists them (test/unit/lint-layers.test.ts keeps the two equal). */
export const STATE_NAMES = ['idle', 'queued', 'loading', 'ready', 'active', 'evicting', 'failed', 'degraded', 'fallback', 'quarantined'];

/**
 * Two or more state words listed by hand, as a union ('ready' | 'active') or an array literal
 * (['loading', 'queued']), outside core/contracts. Such a list is a meaning of its own (what
 * counts as serving, as a problem): the tray and the dashboard once disagreed about a degraded
 * model from two such lists. Use the contract's lists and predicates instead. A Record keyed by
 * ModelStateName is not a list by hand: the compiler makes it name every state.
 */
export function handListedStates(file, source) {
  if (file.startsWith('core/contracts/') || /\.test\.tsx?$/.test(file)) return [];
  const out = [];
  const lists = [/(?:(['"])[a-z-]+\1\s*\|\s*)+(['"])[a-z-]+\2/g, /\[\s*(?:(['"])[a-z-]+\1\s*,\s*)+(['"])[a-z-]+\2\s*,?\s*\]/g];
  for (const list of lists) {
    for (const m of source.matchAll(list)) {
      const words = [...m[0].matchAll(/['"]([a-z-]+)['"]/g)].map((w) => w[1]);
      if (words.every((w) => STATE_NAMES.includes(w))) out.push(`${file}: lists states by hand (${words.join(', ')}) — use core/contracts/model-status.ts' lists and predicates`);
    }
  }
  return out;
}

function* sourceFiles(dir) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|tsx|mts|js|mjs)$/.test(name)) yield path;
  }
}

const isMain = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const problems = [];
  let count = 0;
  for (const top of ['core', 'renderer', 'electron']) {
    let exists = true;
    try { statSync(join(root, top)); } catch { exists = false; }
    if (!exists) continue;
    for (const path of sourceFiles(join(root, top))) {
      count++;
      const file = relative(root, path).split(sep).join('/');
      const source = readFileSync(path, 'utf8');
      problems.push(...violations(file, source), ...handListedStates(file, source));
    }
  }
  if (problems.length) {
    console.error(problems.join('\n'));
    console.error(`\nlint-layers: ${problems.length} layering violation(s) in ${count} files`);
    process.exit(1);
  }
  console.log(`lint-layers: ${count} files, no layering violations`);
}
