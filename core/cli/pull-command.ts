// `llmtray pull NAME`: starts a pull in the running daemon (so the tray and the dashboard show the
// same one) and follows it on the admin event stream until it ends: a bar redrawn in place on a
// terminal, a plain line per progress event when piped (the daemon sends at most one a second),
// one JSON object per line with --json. Ctrl-C cancels the pull; its bytes stay for a later pull.
//
// The order that misses nothing, as `logs -f` does: subscribe first, start the pull once the
// stream is live (its first event), and hold the pull's events that arrive before the start's
// answer says which id to follow — a small file can be pulled before that answer comes back.
import type { AdminEvent } from '../contracts/admin-events.js';
import { formatBytes } from '../contracts/format-bytes.js';
import { isFinished, type PullView } from '../contracts/hub/pulls.js';
import type { CliAdmin } from './admin-client.js';

export interface PullOutput {
  json: boolean;
  /** Whether stdout is a terminal: the bar is redrawn in place. */
  tty: boolean;
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Follows the pull of `name` to its end; resolves with the exit code (0 pulled, 1 refused or failed, 130 cancelled by Ctrl-C). */
export async function pullAndFollow(admin: CliAdmin, name: string, output: PullOutput, interrupt: AbortSignal): Promise<number> {
  let id: string | null = null;
  let last: PullView | null = null;
  const held: PullView[] = [];
  let failure: unknown = null;
  const stop = new AbortController();
  let drawn = false;

  const show = (pull: PullView): boolean => {
    last = pull;
    if (output.json) output.out(`${JSON.stringify(pull)}\n`);
    else if (output.tty && pull.state === 'downloading') {
      output.out(`\r${progressLine(pull)}\u001b[K`);
      drawn = true;
    } else {
      if (drawn) output.out('\n');
      drawn = false;
      if (!isFinished(pull)) output.out(`${progressLine(pull)}\n`);
    }
    return isFinished(pull);
  };
  const start = async (): Promise<void> => {
    try {
      const started = await admin.startPull({ name });
      id = started.id;
      if (!output.json) {
        output.out(`pulling ${started.id}: ${started.files.map((f) => `${f.path} (${formatBytes(f.sizeBytes)})`).join(', ')}\n`);
        if (started.choice !== undefined) output.out(`  chosen for this machine: ${started.choice}\n`);
      }
      const mine = held.splice(0).filter((p) => p.id === id);
      if (mine.length === 0) show(started);
      for (const pull of mine) if (show(pull)) stop.abort();
    } catch (error) {
      failure = error;
      stop.abort();
    }
  };
  const onInterrupt = (): void => {
    if (id === null) return stop.abort();
    // The daemon answers once the pull has stopped; its 'cancelled' event ends the wait.
    admin.cancelPull({ name: id }).catch((error: unknown) => {
      failure = error;
      stop.abort();
    });
  };
  interrupt.addEventListener('abort', onInterrupt, { once: true });

  let asked = false;
  try {
    await admin.events((event: AdminEvent) => {
      if (!asked) {
        asked = true;
        void start();
      }
      if (event.type !== 'PullProgressed') return false;
      if (id === null) {
        held.push(event.pull);
        return false;
      }
      return event.pull.id === id && show(event.pull);
    }, stop.signal);
  } catch (error) {
    if (!stop.signal.aborted) {
      output.err(`llmtray: the daemon's event stream ended before the pull did (${error instanceof Error ? error.message : String(error)}); \`llmtray pull\` lists the pulls, a pull goes on in the daemon.\n`);
      return 1;
    }
  } finally {
    interrupt.removeEventListener('abort', onInterrupt);
  }
  if (failure !== null) throw failure;
  const end = last as PullView | null;
  if (end === null) return 130;
  if (drawn) output.out('\n');
  if (output.json) return exitCodeOf(end);
  if (end.state === 'done') output.out(`${end.message}\n`);
  else output.err(`${end.id}: ${end.state}: ${end.message}\n`);
  return exitCodeOf(end);
}

function exitCodeOf(pull: PullView): number {
  if (pull.state === 'done') return 0;
  return pull.state === 'cancelled' ? 130 : 1;
}

/** One pull as one line: `hf.co/o/r:Q4_K_M  [#####·····]  45 %  12 MiB of 27 MiB  4.5 MiB/s  3 s left`. */
export function progressLine(pull: PullView, width = 20): string {
  if (pull.state !== 'downloading') return `${pull.id}  ${pull.state}${pull.message ? `: ${pull.message}` : ''}`;
  const fraction = pull.totalBytes > 0 ? Math.min(1, pull.receivedBytes / pull.totalBytes) : 0;
  const filled = Math.floor(fraction * width);
  const rate = pull.bytesPerSecond > 0 ? `  ${formatBytes(pull.bytesPerSecond)}/s` : '';
  const left = pull.secondsLeft === null ? '' : `  ${duration(pull.secondsLeft)} left`;
  return `${pull.id}  [${'#'.repeat(filled)}${'·'.repeat(width - filled)}]  ${Math.floor(fraction * 100)} %  ${formatBytes(pull.receivedBytes)} of ${formatBytes(pull.totalBytes)}${rate}${left}`;
}

/** Every pull of this daemon's run, one line each (`llmtray pull` with no name). */
export function pullsText(pulls: readonly PullView[]): string {
  if (pulls.length === 0) return 'No pulls since llmtray started. Pull a model: llmtray pull hf.co/OWNER/REPO:QUANT';
  return pulls.map((pull) => progressLine(pull)).join('\n');
}

function duration(seconds: number): string {
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
