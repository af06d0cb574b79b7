// The daemon's log: one line per event on stderr, with a time and a subsystem, so that
// `llmtray serve` in a terminal reads as a story and a service manager's journal keeps it.
import { guardedProcessOutputs } from '../common/guarded-output.js';
import type { Log, LogFields } from '../controller/effects.js';

export type LogSink = (line: string) => void;

/** stderr, guarded: a closed pipe or a full disk under it never ends the daemon (core/common/guarded-output.ts). */
const toStderr: LogSink = (line) => {
  guardedProcessOutputs().write('stderr', `${line}\n`);
};

export function createLogger(subsystem: string, sink: LogSink = toStderr): Log {
  const write = (level: string, message: string, fields?: LogFields) => {
    const time = new Date().toISOString().slice(11, 23);
    const extra = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
    sink(`${time} ${level} ${subsystem}: ${message}${extra}`);
  };
  return {
    info: (message, fields) => write('I', message, fields),
    warn: (message, fields) => write('W', message, fields),
    error: (message, fields) => write('E', message, fields),
  };
}
