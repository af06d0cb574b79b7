import { describe, expect, it } from 'vitest';
import { RUNTIME_PRIOR_BYTES, RuntimeOverhead } from '../../../core/engine/runtime-overhead.js';

const MiB = 1024 * 1024;

describe('RuntimeOverhead', () => {
  it('stands in with the prior per engine and place, learns the first measurement of each, and ignores later ones and nonsense', () => {
    const runtime = new RuntimeOverhead();
    expect(runtime.bytes('embedded', 'host')).toBe(RUNTIME_PRIOR_BYTES.host.embedded);
    expect(runtime.bytes('llama-server', 'device')).toBe(RUNTIME_PRIOR_BYTES.device['llama-server']);
    runtime.learn('llama-server', 'device', 400 * MiB, 100 * MiB);
    runtime.learn('llama-server', 'device', 900 * MiB, 100 * MiB);
    runtime.learn('embedded', 'host', 50 * MiB, 80 * MiB); // less than the model: not a runtime
    expect(runtime.bytes('llama-server', 'device')).toBe(300 * MiB);
    expect(runtime.bytes('llama-server', 'host')).toBe(RUNTIME_PRIOR_BYTES.host['llama-server']);
    expect(runtime.isMeasured('embedded', 'host')).toBe(false);
  });

  it('tells its listeners of each figure it learns, and of nothing it ignores', () => {
    const runtime = new RuntimeOverhead();
    const heard: number[] = [];
    const unsubscribe = runtime.onLearned(() => heard.push(runtime.bytes('embedded', 'host')));
    runtime.learn('embedded', 'host', 50 * MiB, 80 * MiB);
    runtime.learn('embedded', 'host', 170 * MiB, 100 * MiB);
    runtime.learn('embedded', 'host', 300 * MiB, 100 * MiB);
    expect(heard).toEqual([70 * MiB]);
    unsubscribe();
    runtime.learn('llama-server', 'host', 30 * MiB, 10 * MiB);
    expect(runtime.bytes('llama-server', 'host')).toBe(20 * MiB);
    expect(heard).toEqual([70 * MiB]);
  });

  it('takes the configured figure on a GPU over what it measured, read at each call so a reload applies', () => {
    let configured: number | undefined = 200 * MiB;
    const runtime = new RuntimeOverhead(() => configured);
    runtime.learn('embedded', 'device', 700 * MiB, 100 * MiB);
    expect(runtime.bytes('embedded', 'device')).toBe(200 * MiB);
    expect(runtime.bytes('embedded', 'host')).toBe(RUNTIME_PRIOR_BYTES.host.embedded);
    configured = undefined;
    expect(runtime.bytes('embedded', 'device')).toBe(600 * MiB);
  });
});
