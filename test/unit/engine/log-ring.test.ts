import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineRing, LineSplitter } from '../../../core/engine/supervisor/log-ring.js';

describe('LineRing', () => {
  it('keeps the last `capacity` lines, oldest first, and counts the dropped ones', () => {
    const ring = new LineRing(3);
    for (const line of ['a', 'b', 'c', 'd', 'e']) ring.push(line);
    expect(ring.toArray()).toEqual(['c', 'd', 'e']);
    expect(ring.dropped).toBe(2);
    expect(ring.toArray(2)).toEqual(['d', 'e']);
  });

  it('never holds more than its capacity, whatever is pushed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(fc.string(), { maxLength: 200 }), (capacity, lines) => {
        const ring = new LineRing(capacity);
        for (const line of lines) ring.push(line);
        expect(ring.size).toBe(Math.min(capacity, lines.length));
        expect(ring.toArray()).toEqual(lines.slice(Math.max(0, lines.length - capacity)));
      }),
    );
  });

  it('cuts an overlong line and says how long it was', () => {
    const ring = new LineRing(2, 10);
    ring.push('x'.repeat(25));
    expect(ring.toArray()).toEqual([`${'x'.repeat(10)}… (25 chars)`]);
  });

  it('numbers each line from 0, still counting the ones that fell off, and hands each on as kept', () => {
    const heard: [string, number][] = [];
    const ring = new LineRing(2, 4, (line, position) => heard.push([line, position]));
    expect(ring.next).toBe(0);
    for (const line of ['a', 'b', 'toolong']) ring.push(line);
    expect(ring.next).toBe(3);
    expect(heard).toEqual([['a', 0], ['b', 1], ['tool… (7 chars)', 2]]);
  });

  it('refuses a capacity below one line', () => {
    expect(() => new LineRing(0)).toThrow(/at least 1 line, got 0/);
  });
});

describe('LineSplitter', () => {
  it('joins lines split across chunks and keeps CRLF streams clean', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    splitter.write('0.00.1 I srv  llama_server: mod');
    splitter.write('el loaded\r\nlisten');
    splitter.write('ing on http://127.0.0.1:1\n');
    splitter.write('tail without newline');
    expect(lines).toEqual(['0.00.1 I srv  llama_server: model loaded', 'listening on http://127.0.0.1:1']);
    splitter.end();
    expect(lines.at(-1)).toBe('tail without newline');
  });

  it('hands on an endless line in pieces instead of holding it', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line), 8);
    splitter.write('y'.repeat(20));
    expect(lines).toEqual(['yyyyyyyy', 'yyyyyyyy']);
  });
});
