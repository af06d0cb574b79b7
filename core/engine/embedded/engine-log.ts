// The engine's log: llama-server-style lines on stderr, with llama.cpp's own lines mixed in.
//
// Why llama-server's wording: the supervisor and the failure classifier read both engines'
// logs with one set of patterns (readiness, "failed to allocate", "not within the file
// bounds"), and people reading the dashboard's log pane know these lines already.
// Why llama.cpp's lines are passed through verbatim: they carry the real cause of a failed
// load and the per-device "buffer size = … MiB" lines the footprint estimates learn from.
import type { LlamaLogLevel } from 'node-llama-cpp';

export interface EngineLog {
  /** Writes one line to stderr. Never blocks on the consumer; never throws. */
  line(text: string): void;
  /** Receives llama.cpp's log messages (node-llama-cpp's `logger` option). */
  llamaLogger(level: `${LlamaLogLevel}`, message: string): void;
  /**
   * Resolves after a grace period in which late llama.cpp lines still reach stderr.
   * node-llama-cpp rejects with its JS error before llama.cpp's own explanation has been
   * logged; exiting at once loses the only line that says what was wrong.
   */
  settle(ms?: number): Promise<void>;
}

/**
 * llama.cpp levels we show: everything llama-server shows at its default verbosity. Spelled
 * as LlamaLogLevel's string values so this file does not load node-llama-cpp: main.ts must
 * be listening (and answering /health) before that ~0.3 s import.
 */
const SHOWN: ReadonlySet<string> = new Set<`${LlamaLogLevel}`>(['fatal', 'error', 'warn', 'info', 'log']);

export function createEngineLog(write: (chunk: string) => void = (c) => void process.stderr.write(c)): EngineLog {
  const line = (text: string): void => {
    try {
      write(text.endsWith('\n') ? text : `${text}\n`);
    } catch {
      // stderr closed (the supervisor went away): nothing left to tell.
    }
  };
  return {
    line,
    llamaLogger(level, message) {
      if (!SHOWN.has(level)) return;
      const text = message.trimEnd();
      // llama.cpp draws a progress bar of dots while loading tensors: noise in a log ring.
      if (/^[.\s]*$/.test(text)) return;
      line(text);
    },
    settle(ms = 250) {
      return new Promise((resolve) => setTimeout(resolve, ms));
    },
  };
}
