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

  it("tells of a pull's end, done or failed with what to do, and stays quiet for its progress", () => {
    const pull = { id: 'hf.co/o/r:Q4_K_M', repo: 'o/r', files: [], receivedBytes: 5, totalBytes: 10, bytesPerSecond: 0, secondsLeft: null, startedAt: 0 };
    expect(notificationFor({ type: 'PullProgressed', pull: { ...pull, state: 'done', message: 'pulled', servedAs: 'hf.co/o/r:Q4_K_M' } })).toEqual({
      title: 'hf.co/o/r:Q4_K_M is pulled',
      body: 'Apps can use it now as hf.co/o/r:Q4_K_M.',
    });
    expect(notificationFor({ type: 'PullProgressed', pull: { ...pull, state: 'failed', message: 'o/r is gated: set HF_TOKEN and pull again' } })).toEqual({
      title: 'Pulling hf.co/o/r:Q4_K_M failed',
      body: 'o/r is gated: set HF_TOKEN and pull again.',
    });
    expect(notificationFor({ type: 'PullProgressed', pull: { ...pull, state: 'downloading', message: '' } })).toBeNull();
  });

  it('stays quiet for snapshots and log lines', () => {
    expect(notificationFor({ type: 'SnapshotUpdated', snapshot: snapshot([]) })).toBeNull();
    expect(notificationFor({ type: 'LogAppended', modelId: 'a', first: 0, lines: ['x'] })).toBeNull();
  });
});
