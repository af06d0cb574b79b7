// A llama-server executable for the real daemon whose models misbehave as asked: it answers the
// daemon's probes (`--help` with a real build's help text, `--version`, `--list-devices` as a
// CPU build) and, launched to serve, runs test/support/fake-engine.mjs with the daemon's own
// llama-server flags plus the model's `args` from the config (the fake's --fake-* switches).
// So the daemon, its supervisor, controller and router are all real, and only the engine is
// scripted: a fault a test cannot make a real llama.cpp commit on demand.
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCES = fileURLToPath(new URL('../..', import.meta.url)).replace(/[/\\]dist[/\\]?$/, '');
const FAKE_ENGINE = join(SOURCES, 'test/support/fake-engine.mjs');
const HELP = join(SOURCES, 'test/fixtures/llama-server-help.txt');

/** Writes the stand-in as `dir`/llama-server and returns its path. */
export async function writeStandInLlamaServer(dir: string): Promise<string> {
  const path = join(dir, 'llama-server');
  const quote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
  await writeFile(
    path,
    `#!/bin/sh
case "$1" in
  --help) cat ${quote(HELP)}; exit 0 ;;
  --version) echo 'version: 9999 (stand-in)' >&2; exit 0 ;;
  --list-devices) printf 'Available devices:\\n'; exit 0 ;;
esac
exec ${quote(process.execPath)} ${quote(FAKE_ENGINE)} "$@"
`,
  );
  await chmod(path, 0o755);
  return path;
}
