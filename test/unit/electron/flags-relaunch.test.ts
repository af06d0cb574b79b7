import { describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../../core/daemon/node-flags.js';
import { FLAGS_RELAUNCH_MARKER, flagsRelaunch } from '../../../electron/flags-relaunch.js';

const OURS = DAEMON_NODE_FLAGS.join(' ');

describe('flagsRelaunch: an app started without the daemon\'s V8 flags starts itself again with them', () => {
  it('runs as it is when the command line carries them, alone or among the user\'s own', () => {
    expect(flagsRelaunch({ jsFlags: OURS, argv: ['/opt/llmtray/llmtray'], env: {} })).toEqual({ kind: 'none' });
    expect(flagsRelaunch({ jsFlags: `--expose-gc ${OURS}`, argv: ['/opt/llmtray/llmtray'], env: {} })).toEqual({ kind: 'none' });
  });

  it('relaunches a packaged app started with no arguments (Finder, the Start menu) with the flags', () => {
    expect(flagsRelaunch({ jsFlags: '', argv: ['/Applications/llmtray.app/Contents/MacOS/llmtray'], env: {} })).toEqual({
      kind: 'relaunch',
      args: [`--js-flags=${OURS}`],
    });
  });

  it('keeps the app\'s own arguments and the user\'s own V8 flags, in one --js-flags (Chromium keeps the last)', () => {
    expect(flagsRelaunch({ jsFlags: '--expose-gc', argv: ['electron', '--js-flags=--expose-gc', '.', '--demo'], env: {} })).toEqual({
      kind: 'relaunch',
      args: [`--js-flags=--expose-gc ${OURS}`, '.', '--demo'],
    });
  });

  it('relaunches once: started again and still without them, it runs as it is and says why', () => {
    const verdict = flagsRelaunch({ jsFlags: '', argv: ['llmtray'], env: { [FLAGS_RELAUNCH_MARKER]: '1' } });
    expect(verdict.kind).toBe('give-up');
    expect(verdict.kind === 'give-up' && verdict.warning).toContain(DAEMON_NODE_FLAGS[0]);
  });
});
