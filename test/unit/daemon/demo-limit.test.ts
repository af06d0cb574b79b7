// The demo's budget limit as written to its config: a size a person reads ("260MiB"), and the
// same across starts while the engine's runtime is first a prior, then measured a few MiB apart
// (before, 252926464 at one start and 272193280 at the next).
import { describe, expect, it } from 'vitest';
import { parseSize } from '../../../core/catalog/config/units.js';
import { demoLimitRangeOf, demoLimitText, demoLimitToWrite, type DemoLimitRange } from '../../../core/daemon/demo.js';

const MIB = 2 ** 20;
/** demo-chat 205 MiB and demo-tiny 110 MiB with their runtime, as the embedded engine on a CPU prices them. */
const range = (chatMiB: number, tinyMiB: number): DemoLimitRange => {
  const chat = chatMiB * MIB;
  const tiny = tinyMiB * MIB;
  return { wanted: chat + Math.floor(tiny / 2), low: chat + Math.ceil(tiny / 4), high: chat + Math.floor((3 * tiny) / 4) };
};

describe("the demo's budget limit", () => {
  it('is the wanted room rounded up to 10 MiB, written as the config reads it back', () => {
    const limit = demoLimitToWrite(range(204.6, 110), undefined);
    expect(limit).toBe(260 * MIB);
    expect(demoLimitText(limit!)).toBe('260MiB');
    expect(parseSize(demoLimitText(limit!))).toBe(260 * MIB);
  });

  it('stays as written while the runtime moves the wanted room within the range, as a prior and then a measurement do', () => {
    // First start: the runtime's prior prices both models 12 MiB lower than the measurement will.
    const first = demoLimitToWrite(range(192.6, 98), undefined);
    expect(first).toBe(250 * MIB);
    // The measurement, in the same run and at every start after: the written limit still shows the swap.
    expect(demoLimitToWrite(range(204.6, 110), first!)).toBeNull();
    expect(demoLimitToWrite(range(204.6, 110), first!)).toBeNull();
  });

  it('is rewritten once the runtime moves the range off it, or when the file holds a raw byte count from before', () => {
    expect(demoLimitToWrite(range(300, 110), 250 * MIB)).toBe(360 * MIB);
    // What older versions wrote: in the range, but not a size a person reads.
    expect(demoLimitToWrite(range(204.6, 110), 272_193_280)).toBe(260 * MIB);
  });

  it('rounds to a whole MiB where a 10 MiB step would let demo-chat and demo-tiny fit together', () => {
    // demo-tiny of 8 MiB: the range is 2 MiB wide either side of the wanted room.
    const small = range(201, 8);
    const limit = demoLimitToWrite(small, undefined)!;
    expect(limit).toBe(205 * MIB);
    expect(limit).toBeLessThanOrEqual(small.high);
    expect(limit).toBeGreaterThanOrEqual(small.low);
  });

  it('keeps room for demo-tiny beside demo-draft: a limit kept from an earlier runtime figure below that is written anew', () => {
    // As a fresh clone's CI priced them: the middle half reached down to 232 MiB, tiny + draft needs 263.4.
    const sizes = { chat: 204.6 * MIB, tiny: 110 * MIB, draft: 153.4 * MIB };
    const r = demoLimitRangeOf(sizes);
    expect(r.low).toBe(sizes.tiny + sizes.draft);
    expect(r.high).toBe(sizes.chat + Math.floor((3 * sizes.tiny) / 4));
    const written = demoLimitToWrite(r, 260 * MIB)!;
    expect(written).toBeGreaterThanOrEqual(sizes.tiny + sizes.draft);
    expect(written).toBeLessThanOrEqual(r.high);
    expect(written % MIB).toBe(0);
    // Without a draft the range is the middle half alone.
    expect(demoLimitRangeOf({ ...sizes, draft: null }).low).toBe(sizes.chat + Math.ceil(sizes.tiny / 4));
  });
});
