// Which field a misspelt one was meant to be. The field lists are read from the zod schema's
// own description of itself, so a zod upgrade that changed it would leave every unknown field
// with no list and no guess: these fail first.
import { describe, expect, it } from 'vitest';
import { knownFieldsAt, nearestField } from '../../../core/catalog/config/unknown-fields.js';

describe('the fields a config object takes', () => {
  it.each([
    [[], 'modelDirs'],
    [['listen'], 'clientKeys'],
    [['listen', 'clientKeys', 0], 'key'],
    [['budget'], 'limit'],
    [['engines'], 'warmSpare'],
    [['models', 3], 'ctx'],
  ] as [PropertyKey[], string][])('at %j include %s', (path, field) => {
    expect(knownFieldsAt(path)).toContain(field);
  });

  it('are none where the path leads to no object (a list of text, a value)', () => {
    expect(knownFieldsAt(['modelDirs', 0])).toBeUndefined();
    expect(knownFieldsAt(['models', 0, 'ctx'])).toBeUndefined();
  });
});

describe('the field a misspelt one was meant to be', () => {
  const modelFields = knownFieldsAt(['models', 0])!;

  it.each([
    ['cxt', 'ctx'],
    ['gpu_layers', 'gpuLayers'],
    ['GPULAYERS', 'gpuLayers'],
    ['pined', 'pinned'],
    ['alias', 'aliases'],
    ['idle-ttl', 'idleTtl'],
    ['fallbak', 'fallback'],
  ])('%s → %s', (typo, meant) => {
    expect(nearestField(typo, modelFields)).toBe(meant);
  });

  it('is none where no field is close: a guess that is wrong sends the person to the wrong line', () => {
    expect(nearestField('colour', modelFields)).toBeUndefined();
    expect(nearestField('threads', modelFields)).toBeUndefined();
    // Two edits from "id" in a short name would be a guess at random.
    expect(nearestField('xy', modelFields)).toBeUndefined();
  });
});
