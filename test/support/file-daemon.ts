// One real daemon for a whole test file: `llmtray serve --demo` (daemon-process.ts) on a fresh
// temp data dir, started before the file's first test and stopped after its last, its data dir
// removed with any engine still naming it. The integration files that talk to the demo models
// through the daemon share this set-up instead of each writing the same hooks.
//
// Why per file and not per test: a start (the process, the catalog, the warm spare) costs
// seconds on a 2-core machine, and these files' tests do not depend on a fresh daemon; a file
// whose tests do (a daemon killed, a data dir reused) starts its own with startDaemonProcess.
import OpenAI from 'openai';
import { afterAll, beforeAll } from 'vitest';
import { removeDataDir, startDaemonProcess, type DaemonProcess, type StartOptions } from './daemon-process.js';

export interface FileDaemon {
  /** The running daemon; read inside a test or a hook, after the file's beforeAll. */
  readonly daemon: DaemonProcess;
  /** An OpenAI client on its /v1 endpoint, with no retries, so that a failed answer fails the test. */
  readonly client: OpenAI;
}

/** Registers the file's beforeAll and afterAll, and returns the daemon they start. Call at the file's top level. */
export function fileDaemon(options: StartOptions = {}): FileDaemon {
  let daemon: DaemonProcess | undefined;
  let client: OpenAI | undefined;
  beforeAll(async () => {
    daemon = await startDaemonProcess(options);
    // Any key works: the daemon asks for none on 127.0.0.1.
    client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
  });
  afterAll(async () => {
    if (daemon === undefined) return;
    await daemon.stop();
    await removeDataDir(daemon.dataDir);
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the file's daemon is not started: read it inside a test or a hook");
    return value;
  };
  return {
    get daemon() {
      return started(daemon);
    },
    get client() {
      return started(client);
    },
  };
}
