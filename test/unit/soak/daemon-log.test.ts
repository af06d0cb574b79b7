// The soak classifies faults from the daemon's log lines: these are lines the real daemon wrote
// during soak runs, so a change to the controller's wording breaks here, not silently in a soak.
import { describe, expect, it } from 'vitest';
import { parseLogLine } from '../../soak/daemon-log.js';

describe('parseLogLine', () => {
  it.each([
    ['08:00:28.949 I controller: launching tiny at the full level', { type: 'launching', modelId: 'tiny', level: 'full' }],
    ['08:00:42.774 I controller: big is ready at the smaller-context level', { type: 'ready', modelId: 'big', level: 'smaller-context' }],
    ['08:00:33.965 I controller: evicting chat-a', { type: 'evicting', modelId: 'chat-a' }],
    ['08:01:02.000 I controller: chat-b was not evicted: a request claimed it meanwhile; the next pass decides again', { type: 'claimed-not-evicted', modelId: 'chat-b' }],
    ['08:47:42.471 W daemon: ended 1 model server(s) left by an earlier run', { type: 'orphans-ended', count: 1 }],
    [
      "08:48:49.318 W events: chat-b's server ended on its own (crash): it was killed by SIGKILL while serving, without an error line",
      { type: 'ended-on-its-own', modelId: 'chat-b', kind: 'crash' },
    ],
  ])('%s', (line, event) => {
    expect(parseLogLine(line)).toEqual(event);
  });

  it('reads a failure with the kind and attempts the ladder counted, whether the launch failed or the server died', () => {
    expect(
      parseLogLine('08:00:39.373 W controller: big failed to launch; relaunching at the smaller-context level {"level":"full","kind":"oom","attempts":1,"error":"failed to allocate buffer for kv cache"}'),
    ).toEqual({ type: 'failure', modelId: 'big', what: 'failed to launch', kind: 'oom', attempts: 1, level: 'full', error: 'failed to allocate buffer for kv cache' });
    expect(
      parseLogLine('08:49:10.376 W controller: chat-a died while serving; retrying in 1 s {"level":"full","kind":"hang","attempts":1,"error":"it made no progress for 4 s with 2 requests in flight: no bytes to its clients, and its health probe did not answer"}'),
    ).toMatchObject({ type: 'failure', modelId: 'chat-a', what: 'died while serving', kind: 'hang', attempts: 1 });
    // A fresh server frozen at its first request has answered nothing: worded apart (the soak missed it once).
    expect(
      parseLogLine('07:27:40.101 W controller: chat-a died after it was ready, before it answered anything; retrying in 1 s {"level":"full","kind":"hang","attempts":1,"error":"it made no progress for 4 s with 1 request in flight: no bytes to its clients, and its health probe did not answer"}'),
    ).toMatchObject({ type: 'failure', modelId: 'chat-a', what: 'died after it was ready, before it answered anything', kind: 'hang', attempts: 1 });
  });

  it('reads a quarantine whose reason has parentheses and braces of its own', () => {
    const line =
      "08:00:54.783 E controller: broken is quarantined: failed 1 launch in a row (last failure: invalid — tensor 'blk.1.attn_norm.weight' data is not within the file bounds, model is corrupted or incomplete). It is quarantined until you retry it or change its definition. {\"level\":\"full\",\"kind\":\"invalid\",\"attempts\":1,\"error\":\"tensor 'blk.1.attn_norm.weight' data is not within the file bounds, model is corrupted or incomplete {x}\"}";
    expect(parseLogLine(line)).toMatchObject({ type: 'failure', modelId: 'broken', what: 'quarantined', kind: 'invalid', attempts: 1 });
  });

  it.each([
    '08:00:14.087 I controller: demo-tiny does not fit yet: needs 9.9 MiB; 110 MiB budget, 105 MiB held by demo-chat (105 MiB, priority 0), 5 MiB free',
    '08:00:16.566 I controller: demo-tiny is no longer left out of the plan',
    '08:00:59.804 I daemon: serving 4 model(s) at http://127.0.0.1:35039/v1',
    'llmtray is serving at http://127.0.0.1:35039/v1',
    // A failure line whose fields are cut off is not guessed at.
    '08:00:39.373 W controller: big failed to launch; relaunching at the smaller-context level {"level":"full","ki',
  ])('ignores %s', (line) => {
    expect(parseLogLine(line)).toBeNull();
  });
});
