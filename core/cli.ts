#!/usr/bin/env -S node --max-semi-space-size=4
// The flags above are core/daemon/node-flags.ts's (a shebang cannot import them; a test checks they agree).
// `llmtray`: the headless daemon (`serve`) and a small client over its admin API.
import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { readAdminToken } from './admin/admin-token.js';
import { guardedProcessOutputs } from './common/guarded-output.js';
import { currentPlatform, dataDir as defaultDataDir } from './catalog/paths.js';
import { isModelCommand, type ModelCommand } from './contracts/commands.js';
import { findModelByName } from './contracts/model-names.js';
import { isServing } from './contracts/model-status.js';
import { createCliAdmin, type CliAdmin } from './cli/admin-client.js';
import { followLogs } from './cli/follow-logs.js';
import { pullAndFollow, pullsText } from './cli/pull-command.js';
import { activityText, followActivity } from './cli/activity.js';
import type { RequestFilter } from './contracts/requests/request-record.js';
import { modelsText, noModelsText, statusText } from './cli/format.js';
import { stopOnSignals } from './cli/stop-on-signals.js';
import { takeParentPid, watchParent } from './common/parent-watch.js';
import { readDaemonInfo } from './daemon/daemon-info.js';
import type { RunningDaemon } from './daemon.js';
import { errorMessage } from './contracts/error-message.js';

/** What `llmtray activity` lists without -n: a screenful; the summary is over every request the daemon holds. */
const DEFAULT_ACTIVITY_ROWS = 20;

/** What `llmtray logs ID` prints without -n: a screenful, not llama.cpp's hundreds of metadata lines (issue 35). */
const DEFAULT_LOG_LINES = 50;

const USAGE = `llmtray — keeps local LLMs resident in GPU memory and serves them on one OpenAI endpoint

Usage:
  llmtray serve [--demo] [--config FILE] [--port N] [--host H] [--data-dir DIR]
  llmtray status [--json]            what is resident, the memory budget, what is failing
  llmtray models [--json]            every model in the catalog
  llmtray pin|unpin ID               keep a model resident, or let it go once unused for its idle time
  llmtray load ID [--timeout S]      load now and wait until it is ready (or says why not)
  llmtray unload ID                  stop it (unpins it too)
  llmtray retry ID                   forget a failing model's failures (a quarantine too) and try again
  llmtray logs ID [-n N] [-f]        the model server's last N log lines (default ${DEFAULT_LOG_LINES}); -f follows it until Ctrl-C
  llmtray pull NAME [--json]         download a GGUF from Hugging Face into its cache and serve it as NAME:
                                     hf.co/OWNER/REPO:QUANT, OWNER/REPO (its Q4_K_M) or OWNER/REPO/FILE.gguf;
                                     Ctrl-C cancels (pulling again resumes); HF_TOKEN opens gated repos
  llmtray pull                       the pulls since the daemon started
  llmtray pull --cancel NAME         stop a pull; pull --delete NAME removes a model llmtray pulled
  llmtray activity [-n N] [-f] [--model ID] [--status S] [--client NAME]
                                     the last N requests served (default ${DEFAULT_ACTIVITY_ROWS}): model, wait, first token,
                                     tokens, speed; a summary per model; -f adds each request as it ends;
                                     --status takes a code (429) or a class (5xx)
  llmtray dashboard                  print the dashboard URL

Options:
  --host H         listen on H instead of listen.host; an address other machines can reach
                   needs listen.clientKeys in the config (the admin API stays on 127.0.0.1)
  --data-dir DIR   the daemon's data dir (pins, admin token, logs); default ${defaultDataDir(currentPlatform())}
  --json           machine-readable output
  -h, --help       this text`;

interface Flags {
  demo: boolean;
  config?: string;
  port?: string;
  host?: string;
  'data-dir'?: string;
  json: boolean;
  help: boolean;
  timeout?: string;
  follow: boolean;
  lines?: string;
  cancel: boolean;
  delete: boolean;
  model?: string;
  status?: string;
  client?: string;
}

class UsageError extends Error {}

/** The commands besides `serve` and the model commands; each reads from a running daemon. */
const DAEMON_QUERIES: ReadonlySet<string> = new Set(['status', 'models', 'dashboard', 'logs', 'pull', 'activity']);

function parse(argv: string[]): { command: string | undefined; rest: string[]; flags: Flags } {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        demo: { type: 'boolean', default: false },
        config: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        timeout: { type: 'string' },
        follow: { type: 'boolean', short: 'f', default: false },
        lines: { type: 'string', short: 'n' },
        cancel: { type: 'boolean', default: false },
        delete: { type: 'boolean', default: false },
        model: { type: 'string' },
        status: { type: 'string' },
        client: { type: 'string' },
      },
    });
    return { command: positionals[0], rest: positionals.slice(1), flags: values as Flags };
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}

/** `-n N`: how many of the log's last lines (or the last requests) to print; a count, or the usage. */
function tailLinesOf(flags: Flags, byDefault: number): number {
  if (flags.lines === undefined) return byDefault;
  const count = Number(flags.lines);
  if (flags.lines.trim() === '' || !Number.isInteger(count) || count < 0) throw new UsageError(`-n: expected a number of lines (0 or more), got '${flags.lines}'`);
  return count;
}

function dataDirOf(flags: Flags): string {
  return resolve(flags['data-dir'] ?? defaultDataDir(currentPlatform()));
}

function portOf(flags: Flags): number | undefined {
  if (flags.port === undefined) return undefined;
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port: expected a port number from 0 to 65535, got '${flags.port}'`);
  return port;
}

async function serve(flags: Flags): Promise<void> {
  if (flags.demo && flags.config !== undefined) throw new UsageError('--demo uses its own generated config; drop --config, or drop --demo to use yours');
  const port = portOf(flags);
  // Read before the daemon starts its engines, which must not inherit it.
  const parentPid = takeParentPid(process.env);
  const starting: Promise<RunningDaemon> = import('./daemon.js').then(({ startDaemon }) =>
    startDaemon({
      demo: flags.demo,
      dataDir: dataDirOf(flags),
      ...(flags.config === undefined ? {} : { configPath: resolve(flags.config) }),
      ...(port === undefined ? {} : { port }),
      ...(flags.host === undefined ? {} : { host: flags.host }),
    }),
  );
  const outputs = guardedProcessOutputs();
  // From the first moment, not once serving: a signal during start-up (a warm spare may run
  // already), or one sent on reading the banner below, met Node's default action, which ended
  // the daemon at once and left its engines orphaned. A stop asked for while starting stops
  // what started, once it has.
  let stopAsked = false;
  const stopFor = stopOnSignals({
    stop: async () => {
      stopAsked = true;
      return (await starting).stop();
    },
    signals: process,
    now: () => performance.now(),
    say: (line) => outputs.write('stderr', `${line}\n`),
    exit: (code) => process.exit(code),
  });
  // Started by the launcher or by `npm run serve`: a daemon orphaned by its starter's end (a
  // SIGKILL, npm's shell killed by a forwarded signal) stops, instead of serving under PID 1.
  if (parentPid !== null) {
    watchParent({ parentPid, currentParent: () => process.ppid, onGone: () => stopFor(`the process that started llmtray serve (pid ${parentPid}) has ended`) });
  }
  const daemon = await starting;
  if (stopAsked) return; // stopping already: no "serving" banner after the stop's line
  const snapshot = await daemon.admin.getSnapshot();
  outputs.write(
    'stdout',
    [
      `llmtray is serving at ${daemon.endpoint}`,
      ...daemon.networkEndpoints.map((url) => `  network:    ${url}  (clients send one of listen.clientKeys)`),
      `  dashboard:  ${daemon.dashboardUrl}`,
      // A path printed alone reads as "this file was read"; on a new machine it does not exist yet (issue 35).
      `  config:     ${existsSync(daemon.configPath) ? daemon.configPath : `no config file at ${daemon.configPath}; using the defaults`}`,
      `  data dir:   ${daemon.dataDir}`,
      `  try:        curl ${daemon.endpoint}/models`,
      ...(snapshot.models.length === 0 ? [noModelsText(snapshot)] : []),
      'Press Ctrl-C to stop every model server and exit.',
      '',
    ].join('\n'),
  );
}

/** `load` waits and narrates: loading (with progress) → ready, or the reason it will not come. */
async function loadAndWait(admin: CliAdmin, name: string, flags: Flags): Promise<number> {
  // Passes planned from here on saw the load; an older plan's "does not fit" may be stale.
  const askedAt = Date.now();
  const result = await admin.runCommand({ id: name, command: 'load' });
  if (!result.ok) {
    process.stderr.write(`${result.message}\n`);
    return 1;
  }
  if (!flags.json) process.stdout.write(`${result.message}\n`);
  const timeoutMs = flags.timeout === undefined ? 10 * 60_000 : Number(flags.timeout) * 1000;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  let outcome: { code: number; message: string } = { code: 1, message: `still not ready after ${Math.round(timeoutMs / 1000)} s` };
  let lastLine = '';
  try {
    await admin.events((event) => {
      if (event.type !== 'SnapshotUpdated') return false;
      const model = findModelByName(event.snapshot.models, name);
      if (model === undefined) {
        outcome = { code: 1, message: `'${name}' is no longer in the catalog` };
        return true;
      }
      const s = model.status;
      const line =
        s.state === 'loading' && model.loading?.fraction != null ? `loading ${Math.round(model.loading.fraction * 100)} %` : `${s.state}${s.next ? ` — ${s.next}` : ''}`;
      if (line !== lastLine && !flags.json) process.stdout.write(`  ${model.id}: ${line}\n`);
      lastLine = line;
      if (isServing(s.state)) {
        outcome = { code: 0, message: `${model.id} is ready${s.level !== 'full' && s.level !== null ? ` at the ${s.level} level` : ''}` };
        return true;
      }
      if (s.state === 'fallback') {
        outcome = { code: 0, message: `${model.id} failed to load; ${s.servedBy ?? 'its fallback'} answers in its place: ${s.recovery.lastError ?? ''}` };
        // Done once the fallback serves: answering a request (active) or at a smaller level counts too.
        const fallback = s.servedBy === null ? undefined : findModelByName(event.snapshot.models, s.servedBy);
        return fallback !== undefined && isServing(fallback.status.state);
      }
      if (s.state === 'quarantined') {
        outcome = { code: 1, message: `${model.id} is quarantined: ${s.recovery.lastError ?? s.next ?? ''}` };
        return true;
      }
      // Left out of a plan that wanted it: nothing will make room (the router refuses such a
      // request at once too), so waiting would only hang until --timeout.
      if (s.unschedulableReason !== null && model.desired && (event.snapshot.plan?.at ?? 0) >= askedAt) {
        outcome = { code: 1, message: `${model.id} does not fit: ${s.unschedulableReason}` };
        return true;
      }
      return false;
    }, abort.signal);
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
  }
  (outcome.code === 0 ? process.stdout : process.stderr).write(`${outcome.message}\n`);
  return outcome.code;
}

/** "no log yet: demo-tiny has not started": said of a model that exists and never logged, instead of printing nothing. */
function noLogYet(modelId: string): string {
  return `no log yet: ${modelId} has not started`;
}

/**
 * `llmtray logs ID`: the last `count` lines of the model server's log. A model never started has
 * none, which is said (to stderr, exit 0: the model exists and nothing failed); how many earlier
 * lines were left out is said too, so a person knows -n is there. An unknown id is the daemon's
 * refusal naming the models (exit 1).
 */
async function printLogTail(admin: CliAdmin, name: string, count: number, json: boolean): Promise<number> {
  const tail = await admin.getLogs({ id: name });
  const shown = count === 0 ? [] : tail.lines.slice(-count);
  if (json) {
    process.stdout.write(`${JSON.stringify(shown)}\n`);
    return 0;
  }
  if (tail.next === 0) {
    process.stderr.write(`${noLogYet(tail.modelId)}\n`);
    return 0;
  }
  process.stdout.write(shown.map((line) => `${line}\n`).join(''));
  if (shown.length < tail.lines.length) process.stderr.write(`(the last ${shown.length} of ${tail.next} lines; llmtray logs -n N ${tail.modelId} for more, -f to follow)\n`);
  return 0;
}

/** `logs -f`: follows until Ctrl-C or SIGTERM (exit 0, a person's way to stop), or until the daemon goes (exit 1). */
async function followUntilStopped(admin: CliAdmin, name: string, tailLines: number): Promise<number> {
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const end = await followLogs(admin, name, (line) => process.stdout.write(`${line}\n`), stop.signal, {
      tailLines,
      // To stderr: stdout is the log itself, for a pipe or a file.
      onNoLogYet: (modelId) => process.stderr.write(`${noLogYet(modelId)}; following: its lines appear here once it starts\n`),
    });
    if (end === 'stopped') return 0;
    process.stderr.write('llmtray: the daemon\'s event stream ended (the daemon stopped); no more lines.\n');
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `llmtray pull`: the list with no name, a cancel or delete with the flag, else a pull followed until it ends (Ctrl-C cancels it). */
async function pull(admin: CliAdmin, name: string, flags: Flags): Promise<number> {
  const print = (value: unknown, text: string): void => void process.stdout.write(`${flags.json ? JSON.stringify(value, null, 2) : text}\n`);
  if (name === '') {
    const pulls = await admin.listPulls();
    print(pulls, pullsText(pulls));
    return 0;
  }
  if (flags.cancel) {
    const cancelled = await admin.cancelPull({ name });
    print(cancelled, `${cancelled.id}: ${cancelled.state}: ${cancelled.message}`);
    return 0;
  }
  if (flags.delete) {
    const { removed } = await admin.deletePull({ name });
    print({ removed }, removed.length === 0 ? `${name}: nothing of it was left to remove` : `removed ${removed.length} file${removed.length === 1 ? '' : 's'}:\n${removed.map((path) => `  ${path}`).join('\n')}`);
    return 0;
  }
  const interrupt = new AbortController();
  const onSignal = (): void => interrupt.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await pullAndFollow(admin, name, { json: flags.json, tty: process.stdout.isTTY === true, out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) }, interrupt.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `llmtray activity`: the table and summary; with -f, each request as it ends until Ctrl-C or SIGTERM (exit 0) or the daemon goes (exit 1). */
async function showActivity(admin: CliAdmin, flags: Flags, count: number): Promise<number> {
  const filter: RequestFilter = {};
  // The daemon takes an alias for a model filter; the followed events name ids, so the CLI resolves it the same way.
  if (flags.model !== undefined) filter.model = findModelByName((await admin.getSnapshot()).models, flags.model)?.id ?? flags.model;
  if (flags.status !== undefined) filter.status = flags.status;
  if (flags.client !== undefined) filter.client = flags.client;
  if (!flags.follow) {
    const answer = await admin.getActivity(filter);
    process.stdout.write(`${flags.json ? JSON.stringify(answer.requests.slice(0, count), null, 2) : activityText(answer, count)}\n`);
    return 0;
  }
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const end = await followActivity(admin, filter, count, (text) => process.stdout.write(`${text}\n`), stop.signal);
    if (end === 'stopped') return 0;
    process.stderr.write("llmtray: the daemon's event stream ended (the daemon stopped); no more requests.\n");
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function main(argv: string[]): Promise<number> {
  const { command, rest, flags } = parse(argv);
  if (flags.help || command === undefined || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined && !flags.help ? 1 : 0;
  }
  if (command === 'serve') {
    await serve(flags);
    return -1; // keeps running
  }
  // The command line is checked before the daemon is looked for: a typo must get the usage
  // (exit 2), not "no daemon is running" (exit 1), which sends a person off to start one.
  if (!DAEMON_QUERIES.has(command) && !isModelCommand(command)) throw new UsageError(`unknown command '${command}'`);
  const id = rest[0] ?? '';
  if ((command === 'logs' || isModelCommand(command)) && id === '') throw new UsageError(`${command}: which model? (llmtray ${command} ID)`);
  if (flags.follow && command !== 'logs' && command !== 'activity') throw new UsageError(`-f follows a log or the requests: llmtray logs -f ID, llmtray activity -f`);
  if (flags.lines !== undefined && command !== 'logs' && command !== 'activity') throw new UsageError(`-n counts a log's lines or requests: llmtray logs -n N ID, llmtray activity -n N`);
  const filterFlags = (['model', 'status', 'client'] as const).filter((name) => flags[name] !== undefined);
  if (command !== 'activity' && filterFlags.length > 0) throw new UsageError(`--${filterFlags[0]} filters the requests: llmtray activity --${filterFlags[0]} …`);
  if ((flags.cancel || flags.delete) && command !== 'pull') throw new UsageError(`--${flags.cancel ? 'cancel' : 'delete'} is pull's: llmtray pull --${flags.cancel ? 'cancel' : 'delete'} NAME`);
  if (flags.cancel && flags.delete) throw new UsageError('pull: --cancel or --delete, not both');
  if (command === 'pull' && rest.length > 1) throw new UsageError(`pull takes one name, got ${rest.length}: run one llmtray pull per model (they download side by side; llmtray pull lists them)`);
  if ((flags.cancel || flags.delete) && id === '') throw new UsageError(`pull --${flags.cancel ? 'cancel' : 'delete'}: which model? (llmtray pull --${flags.cancel ? 'cancel' : 'delete'} NAME)`);
  const tailLines = tailLinesOf(flags, command === 'activity' ? DEFAULT_ACTIVITY_ROWS : DEFAULT_LOG_LINES);
  if (flags.follow && flags.json) throw new UsageError(`${command} -f prints lines as they come; drop --json`);
  if (flags.timeout !== undefined && !(Number(flags.timeout) > 0)) throw new UsageError(`--timeout: expected a number of seconds above 0, got '${flags.timeout}'`);
  const dataDir = dataDirOf(flags);
  const info = await readDaemonInfo(dataDir);
  const token = await readAdminToken(dataDir, info.pid);
  if (command === 'dashboard') {
    process.stdout.write(`${info.origin}/#token=${token}\n`);
    return 0;
  }
  const admin = createCliAdmin(info.origin, token);
  switch (command) {
    case 'status': {
      const snapshot = await admin.getSnapshot();
      process.stdout.write(`${flags.json ? JSON.stringify(snapshot, null, 2) : statusText(snapshot)}\n`);
      return 0;
    }
    case 'models': {
      const snapshot = await admin.getSnapshot();
      process.stdout.write(`${flags.json ? JSON.stringify(snapshot.models, null, 2) : modelsText(snapshot)}\n`);
      return 0;
    }
    case 'logs':
      return flags.follow ? followUntilStopped(admin, id, tailLines) : printLogTail(admin, id, tailLines, flags.json);
    case 'pull':
      return pull(admin, id, flags);
    case 'activity':
      return showActivity(admin, flags, tailLines);
    default: {
      const modelCommand = command as ModelCommand;
      if (modelCommand === 'load') return loadAndWait(admin, id, flags);
      const result = await admin.runCommand({ id, command: modelCommand });
      process.stdout.write(`${flags.json ? JSON.stringify(result) : result.message}\n`);
      return result.ok ? 0 : 1;
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`llmtray: ${error.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`llmtray: ${errorMessage(error)}\n`);
    process.exitCode = 1;
  },
);
