import { describe, expect, it } from 'vitest';
import { catalogNamesFor, ollamaNameOf } from '../../../../core/router/ollama/names.js';

describe('model names as Ollama apps send them', () => {
  it('lists an untagged id as id:latest and a tagged one as it is', () => {
    expect(ollamaNameOf('demo-chat')).toBe('demo-chat:latest');
    expect(ollamaNameOf('hf.co/owner/repo:Q4_K_M')).toBe('hf.co/owner/repo:Q4_K_M');
    // A colon in a folder of the name is not a tag.
    expect(ollamaNameOf('host:1/model')).toBe('host:1/model:latest');
  });

  it('means by name:latest the name itself first, then the untagged id', () => {
    expect(catalogNamesFor('demo-chat:latest')).toEqual(['demo-chat:latest', 'demo-chat']);
    expect(catalogNamesFor('demo-chat')).toEqual(['demo-chat']);
    expect(catalogNamesFor('hf.co/owner/repo:Q4_K_M')).toEqual(['hf.co/owner/repo:Q4_K_M']);
  });
});
