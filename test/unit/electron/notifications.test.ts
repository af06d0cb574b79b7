import { describe, expect, it } from 'vitest';
import { notificationFor } from '../../../electron/notifications.js';
import { snapshot } from './snapshot-fixture.js';

describe('notificationFor', () => {
  it('tells of a quarantine with its reason and the way back', () => {
    expect(notificationFor({ type: 'ModelQuarantined', modelId: 'kev-0.5b', reason: "unknown model architecture: 'kev'", at: 1 })).toEqual({
      title: 'kev-0.5b is quarantined',
      body: "unknown model architecture: 'kev'. It will not be loaded again until you retry it from the tray or the dashboard.",
    });
  });

  it('tells of a fallback with its reason and who answers now', () => {
    expect(
      notificationFor({ type: 'ModelFellBack', modelId: 'qwen-32b', fallbackId: 'qwen-7b', reason: 'Out of memory twice, also on the CPU.', at: 1 }),
    ).toEqual({
      title: 'qwen-32b fell back to qwen-7b',
      body: 'Out of memory twice, also on the CPU. Requests for qwen-32b are answered by qwen-7b for now.',
    });
  });

  it('stays quiet for snapshots and log lines', () => {
    expect(notificationFor({ type: 'SnapshotUpdated', snapshot: snapshot([]) })).toBeNull();
    expect(notificationFor({ type: 'LogAppended', modelId: 'a', first: 0, lines: ['x'] })).toBeNull();
  });
});
