// Whether the app must start itself again to give the daemon its V8 flags.
//
// The daemon runs in Electron's main process, whose V8 reads --js-flags only from the command
// line the process was started with (app.commandLine.appendSwitch and v8.setFlagsFromString come
// after the heap is sized). `npm start`, the login item and the Linux packages' .desktop file pass
// them; Finder, the Dock, the Windows Start menu and a double-clicked AppImage start the binary
// with no arguments, and no electron-builder option adds any there. Without them the daemon's
// young generation grows to V8's default 32 MB under traffic and is not given back (see
// core/daemon/node-flags.ts). So an app started without them relaunches itself once, before it
// takes the single-instance lock or shows anything, with the same arguments plus the flags.
import { DAEMON_NODE_FLAGS } from '../core/daemon/node-flags.js';

/** Set in the environment of the relaunched app, so that it never relaunches again. */
export const FLAGS_RELAUNCH_MARKER = 'LLMTRAY_RELAUNCHED_FOR_JS_FLAGS';

export type FlagsRelaunch =
  | { kind: 'none' }
  | { kind: 'relaunch'; args: string[] }
  /** Started again for the flags and still without them: it runs as it is, and says so once. */
  | { kind: 'give-up'; warning: string };

export function flagsRelaunch(options: {
  /** `app.commandLine.getSwitchValue('js-flags')`: '' when the switch is absent. */
  jsFlags: string;
  /** `process.argv`: the binary, then what it was started with. */
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
}): FlagsRelaunch {
  const given = options.jsFlags.split(/\s+/).filter((flag) => flag !== '');
  const missing = DAEMON_NODE_FLAGS.filter((flag) => !given.includes(flag));
  if (missing.length === 0) return { kind: 'none' };
  if (options.env[FLAGS_RELAUNCH_MARKER] === '1') {
    return {
      kind: 'give-up',
      warning: `started again to pass V8 ${missing.join(' ')} and the command line still lacks it; running with V8's defaults (a larger heap at rest)`,
    };
  }
  // A --js-flags the user gave is kept, ours appended: Chromium keeps only the last value of a switch.
  const args = options.argv.slice(1).filter((arg) => !arg.startsWith('--js-flags='));
  return { kind: 'relaunch', args: [`--js-flags=${[...given, ...missing].join(' ')}`, ...args] };
}
