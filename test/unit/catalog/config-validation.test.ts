import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { parseConfigText, type LlmtrayConfig } from '../../../core/catalog/config/load-config.js';
import { DEFAULT_RESERVE_BYTES } from '../../../core/catalog/config/schema.js';
import { parseDuration, parseSize } from '../../../core/catalog/config/units.js';
import type { PlatformFacts } from '../../../core/catalog/paths.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '../../fixtures/configs');
const FILE = '/home/ada/.config/llmtray/config.yaml';
const facts: PlatformFacts = { platform: 'linux', env: {}, homeDir: '/home/ada' };

function errorsOf(text: string): string[] {
  const result = parseConfigText(text, FILE, facts);
  if (result.ok) throw new Error(`expected errors, the config was accepted: ${JSON.stringify(result.config)}`);
  return result.errors;
}

function accepted(text: string): LlmtrayConfig {
  const result = parseConfigText(text, FILE, facts);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.config;
}

const one = (fields: string) => `models:\n  - id: a\n    path: /m/a.gguf\n${fields}`;

// Each row: a config, and the one error it must produce, in full: the file, the field path,
// the bad value and what was expected.
const table: [string, string, string][] = [
  ['negative ctx', `models:\n  - {id: a, path: /m/a.gguf}\n  - {id: b, path: /m/b.gguf}\n  - {id: c, path: /m/c.gguf, ctx: -5}\n`,
    `${FILE}: models[2].ctx: expected a positive integer (context tokens), got -5`],
  ['fractional ctx', one('    ctx: 4096.5\n'), `${FILE}: models[0].ctx: expected a positive integer (context tokens), got 4096.5`],
  ['ctx as text', one('    ctx: lots\n'), `${FILE}: models[0].ctx: expected a positive integer (context tokens), got "lots"`],
  ['missing path', 'models:\n  - id: a\n', `${FILE}: models[0].path: expected the path of a .gguf file, got nothing`],
  ['empty path', one('').replace('/m/a.gguf', '""'), `${FILE}: models[0].path: expected the path of a .gguf file, got ""`],
  ['id with a space', 'models:\n  - id: my model\n    path: /m/a.gguf\n', `${FILE}: models[0].id: expected a model id (text without spaces), got "my model"`],
  ['unknown field in another spelling', one('    gpu_layers: 10\n'),
    `${FILE}: models[0].gpu_layers: unknown field, set to 10; did you mean "gpuLayers"? Expected one of: id, path, ctx, priority, pinned, draft, fallback, gpuLayers, mixedSplit, embeddings, repack, idleTtl, hangLimit, parallel, queueLimit, aliases, engine, args, engineArgs, env`],
  ['unknown field, two letters swapped', one('    cxt: 4096\n'),
    `${FILE}: models[0].cxt: unknown field, set to 4096; did you mean "ctx"? Expected one of: id, path, ctx, priority, pinned, draft, fallback, gpuLayers, mixedSplit, embeddings, repack, idleTtl, hangLimit, parallel, queueLimit, aliases, engine, args, engineArgs, env`],
  ['unknown field like no known one', one('    colour: blue\n'),
    `${FILE}: models[0].colour: unknown field, set to "blue"; expected one of: id, path, ctx, priority, pinned, draft, fallback, gpuLayers, mixedSplit, embeddings, repack, idleTtl, hangLimit, parallel, queueLimit, aliases, engine, args, engineArgs, env`],
  ['unknown budget field, a letter left out', 'budget:\n  limt: 260MiB\n',
    `${FILE}: budget.limt: unknown field, set to "260MiB"; did you mean "limit"? Expected one of: reserve, limit, engineOverhead, unifiedShare, idleSample`],
  ['a misspelt key name beside a client key keeps its secret out', 'listen:\n  clientKeys:\n    - {name: laptop, key: 0123456789abcdef0123, kye: 0123456789abcdef0123}\n',
    `${FILE}: listen.clientKeys[0].kye: unknown field, set to a value not shown here; did you mean "key"? Expected one of: name, key`],
  ['unknown top-level field', 'modeldirs: [/x]\n',
    `${FILE}: modeldirs: unknown field, set to a list (1 item); did you mean "modelDirs"? Expected one of: listen, budget, modelDirs, engines, activity, activationWait, swapTurn, deletedConfigGrace, models`],
  ['gpuLayers word', one('    gpuLayers: most\n'), `${FILE}: models[0].gpuLayers: expected "all" or a whole number of layers (0 or more), got "most"`],
  ['gpuLayers negative', one('    gpuLayers: -1\n'), `${FILE}: models[0].gpuLayers: expected "all" or a whole number of layers (0 or more), got -1`],
  ['engine unknown', one('    engine: vllm\n'), `${FILE}: models[0].engine: expected one of: auto, embedded, llama-server, got "vllm"`],
  ['pinned as text', one('    pinned: "yes please"\n'), `${FILE}: models[0].pinned: expected true or false, got "yes please"`],
  ['args as one string', one('    args: --flash-attn on\n'), `${FILE}: models[0].args: expected a list of arguments, got "--flash-attn on"`],
  ['args item a number', one('    args: [--threads, 4]\n'), `${FILE}: models[0].args[1]: expected text (one argument per list item), got 4`],
  ['engineArgs for an engine there is none of', one('    engineArgs:\n      vllm: [--max-num-seqs, "8"]\n'),
    `${FILE}: models[0].engineArgs.vllm: unknown field, set to a list (2 items); expected one of: embedded, llama-server`],
  ['engineArgs keyed by `auto`, which is a choice and not an engine', one('    engineArgs:\n      auto: [--no-mmap]\n'),
    `${FILE}: models[0].engineArgs.auto: unknown field, set to a list (1 item); expected one of: embedded, llama-server`],
  ['engineArgs with the engine misspelt', one('    engineArgs:\n      llama_server: [--logit-bias, "356+90"]\n'),
    `${FILE}: models[0].engineArgs.llama_server: unknown field, set to a list (2 items); did you mean "llama-server"? Expected one of: embedded, llama-server`],
  ['engineArgs as a list', one('    engineArgs: [--no-mmap]\n'), `${FILE}: models[0].engineArgs: expected a mapping (key: value lines), got a list (1 item)`],
  ['engineArgs of one engine as one string', one('    engineArgs:\n      llama-server: --no-mmap\n'),
    `${FILE}: models[0].engineArgs.llama-server: expected a list of arguments, got "--no-mmap"`],
  ['env value a number', one('    env:\n      CUDA_VISIBLE_DEVICES: 0\n'), `${FILE}: models[0].env.CUDA_VISIBLE_DEVICES: expected text (quote numbers: "0"), got 0`],
  ['idleTtl nonsense', one('    idleTtl: soon\n'), `${FILE}: models[0].idleTtl: expected a duration like "45s", "10m", "1h30m" or a number of seconds, got "soon"`],
  ['budget reserve unit', 'budget:\n  reserve: 2G\n', `${FILE}: budget.reserve: expected a size like "2GiB", "512MB" or a number of bytes, got "2G"`],
  ['budget limit negative', 'budget:\n  limit: -1\n', `${FILE}: budget.limit: expected a size like "2GiB", "512MB" or a number of bytes, got -1`],
  ['budget engine overhead text', 'budget:\n  engineOverhead: lots\n', `${FILE}: budget.engineOverhead: expected a size like "2GiB", "512MB" or a number of bytes, got "lots"`],
  ['budget idle sample too often', 'budget:\n  idleSample: 500ms\n', `${FILE}: budget.idleSample: expected a duration of at least 1s, got "500ms"`],
  ['budget unified share above 1', 'budget:\n  unifiedShare: 1.5\n', `${FILE}: budget.unifiedShare: expected a share of RAM above 0 and at most 1 (e.g. 0.75), got 1.5`],
  ['port out of range', 'listen:\n  port: 70000\n', `${FILE}: listen.port: expected a port number from 1 to 65535, got 70000`],
  ['client key too short', 'listen:\n  clientKeys:\n    - {name: laptop, key: hunter2}\n',
    `${FILE}: listen.clientKeys[0].key: expected a secret of at least 16 characters, e.g. from \`openssl rand -hex 24\`, got a secret that is not shown here`],
  ['client key without a name', 'listen:\n  clientKeys:\n    - {key: 0123456789abcdef0123}\n',
    `${FILE}: listen.clientKeys[0].name: expected a name for the app that uses the key (text without spaces), got nothing`],
  ['client keys as one string', 'listen:\n  clientKeys: 0123456789abcdef0123\n', `${FILE}: listen.clientKeys: expected a list of { name, key }, got "0123456789abcdef0123"`],
  ['two apps with one key', 'listen:\n  clientKeys:\n    - {name: a, key: 0123456789abcdef0123}\n    - {name: b, key: 0123456789abcdef0123}\n',
    `${FILE}: listen.clientKeys[1].key: expected a key no other app has (listen.clientKeys[0] has the same one), so each can be revoked alone`],
  ['two keys with one name', 'listen:\n  clientKeys:\n    - {name: a, key: 0123456789abcdef0123}\n    - {name: a, key: 0123456789abcdef4567}\n',
    `${FILE}: listen.clientKeys[1].name: expected a name no other key has, got "a" (listen.clientKeys[0] has it)`],
  ['allowed host with a port', 'listen:\n  allowedHosts: [workstation.lan:8080]\n',
    `${FILE}: listen.allowedHosts[0]: expected a host name as clients type it (workstation.lan, 192.168.1.20, [fe80::1]), without a port or scheme, got "workstation.lan:8080"`],
  ['allowed host with a scheme', 'listen:\n  allowedHosts: ["http://workstation.lan"]\n',
    `${FILE}: listen.allowedHosts[0]: expected a host name as clients type it (workstation.lan, 192.168.1.20, [fe80::1]), without a port or scheme, got "http://workstation.lan"`],
  ['cors origin with a path', 'listen:\n  corsOrigins: ["http://localhost:3000/app"]\n',
    `${FILE}: listen.corsOrigins[0]: expected an origin as a browser sends it (scheme://host[:port], no path), or "*" for any, got "http://localhost:3000/app"`],
  ['admin somewhere else', 'listen:\n  admin: everywhere\n', `${FILE}: listen.admin: expected loopback (the default) or network, got "everywhere"`],
  ['parallel 0', one('    parallel: 0\n'), `${FILE}: models[0].parallel: expected a whole number of requests served at once, from 1 to 256 (llama.cpp's most slots), got 0`],
  ['parallel past llama.cpp\'s sequences', 'engines:\n  parallel: 257\n', `${FILE}: engines.parallel: expected a whole number of requests served at once, from 1 to 256 (llama.cpp's most slots), got 257`],
  ['queueLimit negative', one('    queueLimit: -1\n'), `${FILE}: models[0].queueLimit: expected a whole number of requests that may wait, 0 or more, got -1`],
  ['queueLimit as text', 'engines:\n  queueLimit: few\n', `${FILE}: engines.queueLimit: expected a whole number of requests that may wait, 0 or more, got "few"`],
  ['unknown field near parallel', one('    paralel: 2\n'),
    `${FILE}: models[0].paralel: unknown field, set to 2; did you mean "parallel"? Expected one of: ${'id, path, ctx, priority, pinned, draft, fallback, gpuLayers, mixedSplit, embeddings, repack, idleTtl, hangLimit, parallel, queueLimit, aliases, engine, args, engineArgs, env'}`],
  ['warmSpare as text', 'engines:\n  warmSpare: off\n', `${FILE}: engines.warmSpare: expected true or false, got "off"`],
  ['saved conversations floor below zero', 'engines:\n  savedConversationsMinTokens: -5\n', `${FILE}: engines.savedConversationsMinTokens: expected a whole number of tokens, 0 or more, got -5`],
  ['saved conversations disk as text', 'engines:\n  savedConversationsDisk: plenty\n', `${FILE}: engines.savedConversationsDisk: expected a size like "2GiB", "512MB" or a number of bytes, got "plenty"`],
  ['savedConversations as text', 'engines:\n  savedConversations: no\n', `${FILE}: engines.savedConversations: expected true or false, got "no"`],
  ['activity.keep zero', 'activity:\n  keep: 0\n', `${FILE}: activity.keep: expected a whole number of requests, at least 1, got 0`],
  ['activity.keepBodies as yes', 'activity:\n  keepBodies: yes\n', `${FILE}: activity.keepBodies: expected a size like "2GiB", "512MB" or a number of bytes, got "yes"`],
  ['activationWait list', 'activationWait: [45s]\n', `${FILE}: activationWait: expected a duration like "45s", "10m", "1h30m" or a number of seconds, got a list (1 item)`],
  ['a turn as long as the default wait', 'swapTurn: 45s\n',
    `${FILE}: swapTurn: expected a turn shorter than activationWait (45s, the default), so that a request waiting behind a busy model gets its model's turn before it times out, got "45s"`],
  ['a turn longer than the wait', 'activationWait: 30s\nswapTurn: 1m\n',
    `${FILE}: swapTurn: expected a turn shorter than activationWait ("30s"), so that a request waiting behind a busy model gets its model's turn before it times out, got "1m"`],
  ['a wait within the default turn', 'activationWait: 2\n',
    `${FILE}: activationWait: expected a wait longer than swapTurn (2s, the default), so that a request waiting behind a busy model gets its model's turn before it times out, got 2`],
  ['models a mapping', 'models:\n  a: {path: /m/a.gguf}\n', `${FILE}: models: expected a list of models, got a mapping`],
  ['model entry empty', 'models:\n  -\n', `${FILE}: models[0]: expected a mapping (key: value lines), got an empty value`],
  ['top level a list', '- a\n- b\n', `${FILE}: (top level): expected a mapping (key: value lines), got a list (2 items)`],
  ['duplicate id', 'models:\n  - {id: qwen, path: /m/a.gguf}\n  - {id: qwen, path: /m/b.gguf}\n',
    `${FILE}: models[1].id: expected a name no other model uses, got "qwen" (already used by models[0].id)`],
  ['duplicate id by case', 'models:\n  - {id: qwen, path: /m/a.gguf}\n  - {id: Qwen, path: /m/b.gguf}\n',
    `${FILE}: models[1].id: expected a name no other model uses, got "Qwen" (already used by models[0].id)`],
  ['alias equals an id', 'models:\n  - {id: qwen, path: /m/a.gguf}\n  - {id: llama, path: /m/b.gguf, aliases: [qwen]}\n',
    `${FILE}: models[1].aliases[0]: expected a name no other model uses, got "qwen" (already used by models[0].id)`],
  ['duplicate alias', 'models:\n  - {id: a, path: /m/a.gguf, aliases: [gpt-4]}\n  - {id: b, path: /m/b.gguf, aliases: [gpt-4]}\n',
    `${FILE}: models[1].aliases[0]: expected a name no other model uses, got "gpt-4" (already used by models[0].aliases[0])`],
];

describe('config validation', () => {
  test.each(table)('%s', (_name, text, expected) => {
    expect(errorsOf(text)).toEqual([expected]);
  });

  test('every problem in a file is reported, not only the first', () => {
    const errors = errorsOf('listen: {port: 0}\nmodels:\n  - {id: a, path: /m/a.gguf, ctx: 0, priority: high}\n');
    expect(errors).toHaveLength(3);
    expect(errors.map((e) => e.split(': ')[1])).toEqual(['listen.port', 'models[0].ctx', 'models[0].priority']);
  });

  test("listen.ollamaPort is a port (Ollama's 11434, say), absent unless set", () => {
    expect(accepted('listen: {ollamaPort: 11434}\n').listen.ollamaPort).toBe(11434);
    expect(accepted('models: []\n').listen.ollamaPort).toBeUndefined();
    expect(errorsOf('listen: {ollamaPort: 0}\n')[0]).toContain("listen.ollamaPort: expected a port number from 1 to 65535 (Ollama's own is 11434)");
  });

  test('a YAML syntax error names the line and column', () => {
    const text = readFileSync(join(fixtures, 'yaml-syntax-error.yaml'), 'utf8');
    const [error, ...rest] = errorsOf(text);
    expect(rest).toEqual([]);
    expect(error).toMatch(new RegExp(`^${FILE.replace(/[.]/g, '\\.')}:5:1: YAML syntax error: Missing closing "quote$`));
  });

  test('a duplicate YAML key is a syntax error with its position', () => {
    expect(errorsOf('listen:\n  port: 1\n  port: 2\n')).toEqual([`${FILE}:3:3: YAML syntax error: Map keys must be unique`]);
  });

  test('an empty file is the defaults', () => {
    const config = accepted('# nothing yet\n');
    expect(config.models).toEqual([]);
    expect(config.budget).toEqual({ reserveBytes: DEFAULT_RESERVE_BYTES });
    expect(config.modelDirs).toContain('/home/ada/.cache/huggingface/hub');
    expect(config.warmSpare).toBe(true);
    expect(config.savedConversations).toBe(true);
    expect(config.activity).toEqual({ keep: 1000, keepBodiesBytes: 0 });
  });

  test("activity: how many requests are kept, and each body's first bytes only when asked", () => {
    expect(accepted('activity:\n  keep: 50\n  keepBodies: 64KiB\n')).toMatchObject({ activity: { keep: 50, keepBodiesBytes: 65_536 } });
    expect(accepted('activity:\n  keep: 5\n')).toMatchObject({ activity: { keep: 5, keepBodiesBytes: 0 } });
  });

  test('a turn shorter than the wait is accepted, down to 0 (first come, first served)', () => {
    expect(accepted('activationWait: 3s\nswapTurn: 2999ms\n')).toMatchObject({ activationWaitMs: 3_000, swapTurnMs: 2_999 });
    expect(accepted('activationWait: 1s\nswapTurn: 0\n')).toMatchObject({ activationWaitMs: 1_000, swapTurnMs: 0 });
  });

  test("a model's parallel and queueLimit are its own, else each the default under engines:, else absent (no limit)", () => {
    const config = accepted(
      'engines:\n  parallel: 2\n  queueLimit: 8\nmodels:\n  - {id: a, path: /m/a.gguf}\n  - {id: b, path: /m/b.gguf, parallel: 1}\n  - {id: c, path: /m/c.gguf, queueLimit: 0}\n',
    );
    expect(config.defaultLimits).toEqual({ parallel: 2, queueLimit: 8 });
    expect(config.models.map((m) => m.limits)).toEqual([{ parallel: 2, queueLimit: 8 }, { parallel: 1, queueLimit: 8 }, { parallel: 2, queueLimit: 0 }]);
    const none = accepted(one('    queueLimit: 3\n'));
    expect(none.defaultLimits).toEqual({});
    expect(none.models[0]?.limits).toEqual({ queueLimit: 3 });
  });

  test('the warm spare can be turned off', () => {
    expect(accepted('engines:\n  warmSpare: false\n').warmSpare).toBe(false);
  });

  test('saved conversations can be turned off, and their floor and disk budget set', () => {
    expect(accepted('engines:\n  savedConversations: false\n').savedConversations).toBe(false);
    expect(accepted('engines:\n  savedConversationsMinTokens: 1024\n  savedConversationsDisk: 512MiB\n')).toMatchObject({ savedConversationsMinTokens: 1024, savedConversationsBudgetBytes: 512 * 2 ** 20 });
  });

  test('the LAN fields are read as written, host names in lower case', () => {
    const config = accepted(
      'listen:\n  host: 0.0.0.0\n  clientKeys:\n    - {name: laptop, key: 0123456789abcdef0123}\n  allowedHosts: [Workstation.LAN, "[fe80::1]"]\n  corsOrigins: ["http://192.168.1.7:3000", "*"]\n  admin: network\n',
    );
    expect(config.listen).toEqual({
      host: '0.0.0.0',
      port: 11435,
      clientKeys: [{ name: 'laptop', key: '0123456789abcdef0123' }],
      allowedHosts: ['workstation.lan', '[fe80::1]'],
      corsOrigins: ['http://192.168.1.7:3000', '*'],
      admin: 'network',
    });
  });

  test('the full example is accepted with every value converted and every path resolved', () => {
    const config = accepted(readFileSync(join(fixtures, 'full.yaml'), 'utf8'));
    expect(config.listen).toEqual({
      host: '127.0.0.1',
      port: 9137,
      clientKeys: [{ name: 'editor', key: '4f1c0e8a9b2d7e6f5a3c1b0d' }],
      allowedHosts: ['workstation.lan'],
      corsOrigins: ['http://localhost:3000'],
      admin: 'network',
    });
    expect(config.budget).toEqual({ reserveBytes: 1.5 * 2 ** 30, limitBytes: 20_000_000_000, unifiedShare: 0.6, engineOverheadBytes: 300 * 2 ** 20, idleSampleMs: 30_000 });
    expect(config.modelDirs).toEqual(['/home/ada/models', '/home/ada/.config/llmtray/more-models']);
    expect(config.llamaServerPath).toBe('/opt/llama.cpp/bin/llama-server');
    expect(config.activationWaitMs).toBe(90_000);
    const [big, small] = config.models;
    expect(big).toMatchObject({
      id: 'qwen-7b', path: '/home/ada/models/qwen2.5-7b-instruct-q4_k_m.gguf', ctx: 16384, priority: 10, pinned: true,
      draft: 'qwen-0.5b', fallback: 'qwen-0.5b', gpuLayers: 'all', idleTtlMs: 30 * 60_000, aliases: ['gpt-4o', 'coder'],
      engine: 'llama-server', args: ['--flash-attn', 'on'], engineArgs: { 'llama-server': ['--logit-bias', '151657+2'], embedded: ['--no-mmap'] },
      env: { CUDA_VISIBLE_DEVICES: '0' }, index: 0,
    });
    expect(small).toMatchObject({ path: '/home/ada/.config/llmtray/models/qwen2.5-0.5b-instruct-q8_0.gguf', gpuLayers: 12, idleTtlMs: 90_000, engine: 'embedded', engineArgs: {}, index: 1 });
    expect([config.defaultLimits, big?.limits, small?.limits]).toEqual([{ parallel: 2, queueLimit: 6 }, { parallel: 4, queueLimit: 0 }, { parallel: 2, queueLimit: 6 }]);
    expect(small?.ctx).toBeUndefined();
  });
});

describe('sizes and durations', () => {
  test.each([
    ['2GiB', 2 * 2 ** 30], ['512MB', 512e6], ['1.5 gb', 1.5e9], ['100', 100], [4096, 4096], ['3 KiB', 3072], ['0', 0],
  ])('size %s is %d bytes', (text, bytes) => expect(parseSize(text)).toBe(bytes));

  test.each(['2G', '2 gigs', '-1GB', '', 'GiB', '1e9', true])('size %s is refused', (text) => expect(parseSize(text)).toBeUndefined());

  test.each([['45s', 45_000], ['10m', 600_000], ['1h30m', 5_400_000], ['250ms', 250], [90, 90_000], ['1.5s', 1500]])(
    'duration %s is %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms),
  );

  test.each(['45', '45 s', 'soon', '-5s', '1d', -1])('duration %s is refused', (text) => expect(parseDuration(text)).toBeUndefined());

  test('every whole number of GiB and MB round-trips', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 4096 }), (n) => parseSize(`${n}GiB`) === n * 2 ** 30 && parseSize(`${n}MB`) === n * 1e6));
  });
});
