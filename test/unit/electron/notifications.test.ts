import { describe, expect, it } from 'vitest';
import { notificationFor } from '../../../electron/notifications.js';
import { snapshot } from './snapshot-fixture.js';

describe('notificationFor', () => {
  it('tells of a quarantine with its reason and where Retry is, saying "until you retry" once', () => {
    // The controller's reason, as core/controller/model-record.ts words it.
    const reason = "Failed 5 launches (unknown model architecture: 'kev'). It is quarantined until you retry it or change its definition.";
    const text = notificationFor({ type: 'ModelQuarantined', modelId: 'kev-0.5b', reason, at: 1 });
    expect(text).toEqual({ title: 'kev-0.5b is quarantined', body: `${reason} Retry is in the tray menu and on the dashboard.` });
    expect(text?.body.split('until you retry')).toHaveLength(2);
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
