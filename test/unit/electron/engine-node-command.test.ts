import { describe, expect, it } from 'vitest';
import { engineNodeCommand } from '../../../electron/engine-node-command.js';

describe('engineNodeCommand', () => {
  it('runs engines with Electron\'s own Node inside Electron', () => {
    expect(engineNodeCommand({ execPath: '/opt/llmtray/llmtray', isElectron: true })).toEqual({
      command: '/opt/llmtray/llmtray',
      env: { ELECTRON_RUN_AS_NODE: '1' },
    });
  });

  it('adds nothing under plain Node', () => {
    expect(engineNodeCommand({ execPath: '/usr/bin/node', isElectron: false })).toEqual({ command: '/usr/bin/node', env: {} });
  });
});
