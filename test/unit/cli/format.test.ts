// `llmtray status`: the LEVEL column in words, one per launch level.
import { describe, expect, it } from 'vitest';
import { statusText } from '../../../core/cli/format.js';
import { model, snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';

/** The LEVEL column of `statusText`, by model id (columns are two spaces apart; words inside one space). */
function levelColumn(text: string): Record<string, string> {
  const lines = text.split('\n');
  const header = lines.findIndex((line) => line.startsWith('MODEL'));
  const start = lines[header]!.indexOf('LEVEL');
  const end = lines[header]!.indexOf('PINNED');
  return Object.fromEntries(lines.slice(header + 1).map((line) => [line.split(' ')[0], line.slice(start, end).trim()]));
}

describe('statusText', () => {
  it('names every level in words, partial as part on the CPU', () => {
    const text = statusText(
      snapshot({
        models: [
          model('a-full', { status: { state: 'ready', level: 'full' } }),
          model('b-smaller', { status: { state: 'degraded', level: 'degraded' } }),
          model('c-split', { status: { state: 'degraded', level: 'partial' } }),
          model('d-cpu', { status: { state: 'degraded', level: 'minimal' } }),
          model('e-idle'),
        ],
      }),
    );
    expect(levelColumn(text)).toEqual({
      'a-full': 'full',
      'b-smaller': 'smaller context',
      'c-split': 'part on CPU',
      'd-cpu': 'CPU only',
      'e-idle': '',
    });
  });
});
