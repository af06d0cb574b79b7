import { describe, expect, it } from 'vitest';
import { RecordingBridge } from '../../../renderer/src/test-fixtures/recording-bridge.js';
import { electronBridge } from '../../../renderer/src/transport/electron-bridge.js';

describe('electronBridge', () => {
  it("uses the preload's window.llmtray when it is there, and says there is none otherwise", () => {
    const preload = new RecordingBridge();
    expect(electronBridge({ llmtray: preload })).toBe(preload);
    expect(electronBridge({})).toBeNull();
  });
});
