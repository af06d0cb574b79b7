#!/usr/bin/env node
// A stand-in model server for supervisor tests: speaks llama-server's launch flags and
// /health (503 while "loading", then 200), prints llama-server's own log lines, and misbehaves
// on request. Plain Node, no dependencies, so a test can spawn it like any engine.
//
// Test flags (all optional):
//   --fake-ready-after MS       stay "loading" (503) for MS, then become ready
//   --fake-silent               print no "model loaded"/"listening" line (readiness by polling only)
//   --fake-progress             put {"progress": …} in the 503 body
//   --fake-ignore-sigterm       ignore SIGTERM (so does the grandchild, if any)
//   --fake-spawn-child          start a grandchild that lives until it is killed; prints its pid
//   --fake-child-own-group      with --fake-spawn-child: the grandchild leads its own process group
//                               (setsid), so one signal to the server's group does not reach it
//   --fake-log-file FILE        print FILE's lines (but '# ' comments) to stderr, then exit (before ready, or after
//                               ready when --fake-exit-after is given)
//   --fake-exit-with CODE|SIG   exit code (default 1) or signal name used with the above
//   --fake-exit-after MS        MS after ready, print --fake-log-file (if any) and exit
//   --fake-device-buffer-mib N  print llama.cpp's "CUDA0 model buffer size = N MiB" while loading
//   --fake-port-taken-once FILE act as if the port was taken (llama-server's bind error, exit 1)
//                               unless FILE exists; creates FILE, so the next launch succeeds
//   --fake-answer-after MS      answer each chat request MS after its body arrived (a decode that takes
//                               time; requests overlap, as on a server with enough slots)
//   --fake-wedged-decode        once ready, take chat requests and never answer them, while /health
//                               stays 200 and /slots answers with counters that never move: the
//                               wedged decode llama-server users report, which /health cannot see
//   --fake-anthropic            serve POST /v1/messages/count_tokens as a llama-server with Anthropic's
//                               Messages API does (one token per character); without it, 404 as older
//                               builds answer; records each count asked for in /fake-counts
//   --fake-abort-at-first-request  at its first chat or completion request, print a CUDA error line and
//                               abort (SIGABRT) before answering: a fault at the first decode
//   --fake-fault-file FILE      at a chat or completion request while FILE exists: print FILE's lines (but
//                               '# ' comments) to stderr, remove FILE, and abort (SIGABRT) before answering:
//                               a fault of the card, once (the relaunch finds no FILE and serves)
// Other flags (llama-server's own) are taken as the daemon passes them: a flag followed by
// another flag, or by nothing, is a switch (--jinja, --metrics); else it takes the next word.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';

const BOOLEAN = new Set(['--no-mmap', '--fake-silent', '--fake-progress', '--fake-ignore-sigterm', '--fake-spawn-child', '--fake-child-own-group', '--fake-wedged-decode', '--fake-anthropic', '--fake-abort-at-first-request']);

/** A word that is a flag rather than a flag's value (-1 is a value: `-ngl -1`). */
const isFlag = (word) => word !== undefined && /^--?[A-Za-z]/.test(word);

function parseArgs(argv) {
  const flags = new Map();
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (BOOLEAN.has(flag) || argv[i + 1] === undefined || isFlag(argv[i + 1])) flags.set(flag, true);
    else flags.set(flag, argv[++i]);
  }
  return flags;
}

/** With --fake-abort-at-first-request: dies as a CUDA fault at the first decode does, without answering. */
function abortIfFirstRequest() {
  if (!flags.get('--fake-abort-at-first-request')) return;
  log('E', 'CUDA error: an illegal memory access was encountered');
  setTimeout(() => process.kill(process.pid, 'SIGABRT'), 20);
  return true;
}

/** With --fake-fault-file: dies of the fault that file holds, once. */
function faultIfAsked() {
  const file = flags.get('--fake-fault-file');
  if (!file || !existsSync(file)) return false;
  const lines = readFileSync(file, 'utf8').split('\n').filter((line) => line !== '' && !line.startsWith('# '));
  rmSync(file, { force: true });
  for (const line of lines) process.stderr.write(`${line}\n`);
  setTimeout(() => process.kill(process.pid, 'SIGABRT'), 20);
  return true;
}

const flags = parseArgs(process.argv.slice(2));
const started = Date.now();
const stamp = () => {
  const ms = Date.now() - started;
  return `0.${String(Math.floor(ms / 1000)).padStart(2, '0')}.${String(ms % 1000).padStart(3, '0')}.000`;
};
const log = (level, text) => process.stderr.write(`${stamp()} ${level} ${text}\n`);

const host = flags.get('--host') ?? '127.0.0.1';
const port = Number(flags.get('--port') ?? 8080);
// The supervisor passes the key in a file where the build takes one (as llama-server: one key a line).
const apiKeyFile = flags.get('--api-key-file');
const apiKey = apiKeyFile ? readFileSync(apiKeyFile, 'utf8').trim() : flags.get('--api-key');
const aliases = (flags.get('--alias') ?? 'fake').split(',');
const readyAfter = Number(flags.get('--fake-ready-after') ?? 0);
const exitWith = flags.get('--fake-exit-with') ?? '1';
const answerAfter = Number(flags.get('--fake-answer-after') ?? 0);
let ready = false;
/** Chat requests taken so far: /slots's id_task. */
let tasks = 0;
/** count_tokens requests answered so far (with --fake-anthropic), for GET /fake-counts. */
let counts = 0;

function exitNow() {
  const logFile = flags.get('--fake-log-file');
  if (logFile) {
    for (const line of readFileSync(logFile, 'utf8').split('\n')) {
      if (line !== '' && !line.startsWith('# ')) process.stderr.write(`${line}\n`);
    }
  }
  // Let stderr drain before ending, as a real engine's last lines do.
  setTimeout(() => {
    if (/^SIG/.test(exitWith)) process.kill(process.pid, exitWith);
    else process.exit(Number(exitWith));
  }, 20);
}

log('I', `srv    load_model: loading model '${flags.get('-m') ?? ''}'`);
process.stdout.write(`fake-engine: pid ${process.pid}\n`);

if (flags.get('--fake-spawn-child')) {
  const ignore = flags.get('--fake-ignore-sigterm') ? "process.on('SIGTERM', () => {});" : '';
  const child = spawn(process.execPath, ['-e', `${ignore} setInterval(() => {}, 1 << 30)`], { stdio: 'ignore', detached: Boolean(flags.get('--fake-child-own-group')) });
  process.stdout.write(`fake-engine: grandchild pid ${child.pid}\n`);
}

if (flags.get('--fake-ignore-sigterm')) {
  process.on('SIGTERM', () => log('W', 'srv  fake-engine: ignoring SIGTERM'));
} else {
  process.on('SIGTERM', () => {
    log('I', 'srv    operator(): operator(): cleaning up before exit...');
    process.exit(0);
  });
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = createServer((req, res) => {
  if (req.url === '/health') {
    if (ready) return json(res, 200, { status: 'ok' });
    const error = { code: 503, message: 'Loading model', type: 'unavailable_error' };
    if (flags.get('--fake-progress')) error.progress = Math.min(0.99, (Date.now() - started) / Math.max(1, readyAfter));
    return json(res, 503, { error });
  }
  if (apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
    return json(res, 401, { error: { code: 401, message: 'Invalid API Key', type: 'authentication_error' } });
  }
  if (req.url === '/slots') {
    return json(res, 200, [{ id: 0, id_task: tasks, is_processing: tasks > 0, n_prompt_tokens: 0, n_decoded: 0 }]);
  }
  if (req.url === '/fake-counts') return json(res, 200, { counts });
  if (req.url === '/v1/messages/count_tokens' && req.method === 'POST' && flags.get('--fake-anthropic')) {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      counts++;
      const messages = JSON.parse(body || '{}').messages ?? [];
      json(res, 200, { input_tokens: messages.map((m) => String(m.content)).join('').length });
    });
    return;
  }
  if (req.url === '/v1/models') {
    return json(res, 200, { object: 'list', data: aliases.map((id) => ({ id, object: 'model', owned_by: 'fake' })) });
  }
  if ((req.url === '/v1/chat/completions' || req.url === '/v1/completions') && req.method === 'POST' && (abortIfFirstRequest() || faultIfAsked())) return;
  if (req.url === '/v1/chat/completions' && req.method === 'POST') {
    tasks++;
    if (flags.get('--fake-wedged-decode')) return; // taken, never answered
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const messages = JSON.parse(body || '{}').messages ?? [];
      const last = messages.at(-1)?.content ?? '';
      const answer = () => json(res, 200, {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: aliases[0],
        choices: [{ index: 0, message: { role: 'assistant', content: `echo: ${last}` }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      });
      if (answerAfter > 0) setTimeout(answer, answerAfter);
      else answer();
    });
    return;
  }
  json(res, 404, { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } });
});

server.on('error', (error) => {
  log('E', `srv          start: couldn't bind HTTP server socket, hostname: ${host}, port: ${port} (${error.code})`);
  process.exit(1);
});

const portTakenOnce = flags.get('--fake-port-taken-once');
if (portTakenOnce && !existsSync(portTakenOnce)) {
  writeFileSync(portTakenOnce, 'taken\n');
  server.emit('error', Object.assign(new Error('address already in use'), { code: 'EADDRINUSE' }));
}

server.listen(port, host, () => {
  if (flags.get('--fake-log-file') && !flags.get('--fake-exit-after')) return exitNow();
  const mib = flags.get('--fake-device-buffer-mib');
  if (mib) log('I', `load_tensors:        CUDA0 model buffer size = ${Number(mib).toFixed(2)} MiB`);
  setTimeout(() => {
    ready = true;
    if (!flags.get('--fake-silent')) {
      log('I', 'srv  llama_server: model loaded');
      log('I', `srv  llama_server: listening on http://${host}:${port}`);
    }
    const exitAfter = flags.get('--fake-exit-after');
    if (exitAfter !== undefined) setTimeout(exitNow, Number(exitAfter));
  }, readyAfter);
});
