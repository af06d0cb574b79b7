import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { GuardedOutputs } from '../../../core/common/guarded-output.js';

/** A stream that records writes and fails like a pipe with no reader once `fail` is called. */
class FakeStream extends EventEmitter {
  written: string[] = [];
  throwOnWrite: Error | null = null;
  write(text: string): boolean {
    if (this.throwOnWrite) throw this.throwOnWrite;
    this.written.push(text);
    return true;
  }
}

const epipe = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });

describe('GuardedOutputs', () => {
  it("turns a stream's error event into a loss told once, and writes to it no more", () => {
    const stdout = new FakeStream();
    const stderr = new FakeStream();
    const outputs = new GuardedOutputs({ stdout, stderr });
    const told: string[] = [];
    outputs.onLost((l) => told.push(`${l.stream}:${l.code}`));
    expect(outputs.write('stderr', 'a')).toBe(true);
    stderr.emit('error', epipe());
    stderr.emit('error', epipe());
    expect(outputs.write('stderr', 'b')).toBe(false);
    expect(outputs.write('stdout', 'c')).toBe(true);
    expect(stderr.written).toEqual(['a']);
    expect(told).toEqual(['stderr:EPIPE']);
    expect(outputs.lostOutputs().map((l) => l.stream)).toEqual(['stderr']);
  });

  it('takes a write that throws as the loss, and a watcher that throws loses nothing else', () => {
    const stdout = new FakeStream();
    const outputs = new GuardedOutputs({ stdout, stderr: new FakeStream() });
    const told: string[] = [];
    outputs.onLost(() => {
      throw new Error('watcher bug');
    });
    outputs.onLost((l) => told.push(l.code));
    stdout.throwOnWrite = Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    expect(outputs.write('stdout', 'x')).toBe(false);
    expect(told).toEqual(['ENOSPC']);
  });
});
