import { describe, expect, it } from 'vitest';
import type { ModelCard } from '../../../../core/router/model-gateway.js';
import { capabilitiesOf, parameterSize, psEntry, showAnswer, tagsEntry } from '../../../../core/router/ollama/models.js';

function card(overrides: Partial<ModelCard> = {}, template: string | null = null): ModelCard {
  return {
    modelId: 'demo-chat',
    sizeBytes: 1234,
    modifiedAt: Date.UTC(2026, 0, 2),
    digest: 'a'.repeat(64),
    contextTokens: 2048,
    vision: false,
    embeddingsOnly: false,
    gguf: { architecture: 'llama', fileType: 'F16', parameterCount: 7_615_616_512, metadata: { 'general.architecture': 'llama', 'llama.context_length': 8192 }, chatTemplate: template },
    ...overrides,
  };
}

describe("Ollama's model routes", () => {
  it("says parameter_size as Ollama does", () => {
    expect(parameterSize(7_615_616_512)).toBe('7.62B');
    expect(parameterSize(494_032_768)).toBe('494.03M');
    expect(parameterSize(125_000)).toBe('125K');
    expect(parameterSize(12)).toBe('12');
  });

  it('lists a model under its Ollama name with the details from its GGUF', () => {
    expect(tagsEntry(card())).toEqual({
      name: 'demo-chat:latest',
      model: 'demo-chat:latest',
      modified_at: '2026-01-02T00:00:00.000Z',
      size: 1234,
      digest: 'a'.repeat(64),
      details: { parent_model: '', format: 'gguf', family: 'llama', families: ['llama'], parameter_size: '7.62B', quantization_level: 'F16' },
    });
  });

  it('says what a model can do from its template, projector and pooling', () => {
    expect(capabilitiesOf(card())).toEqual(['completion']);
    expect(capabilitiesOf(card({}, '{% if tools %}{{ tools }}{% endif %}<think>'))).toEqual(['completion', 'tools', 'thinking']);
    expect(capabilitiesOf(card({ vision: true }))).toEqual(['completion', 'vision']);
    expect(capabilitiesOf(card({ embeddingsOnly: true }))).toEqual(['embedding']);
  });

  it("shows the model's keys, template and context", () => {
    const shown = showAnswer(card({}, '{{ messages }}'));
    expect(shown['model_info']).toEqual({ 'general.architecture': 'llama', 'llama.context_length': 8192 });
    expect(shown['template']).toBe('{{ messages }}');
    expect(shown['parameters']).toContain('num_ctx');
    expect(shown['parameters']).toContain('2048');
  });

  it('says when a resident model expires, and the far future for one nothing unloads', () => {
    const resident = { modelId: 'demo-chat', sizeBytes: 10, deviceBytes: 8, expiresAt: Date.UTC(2026, 0, 2, 0, 5), contextTokens: 2048 };
    expect(psEntry(resident, card())).toMatchObject({ name: 'demo-chat:latest', size: 10, size_vram: 8, expires_at: '2026-01-02T00:05:00.000Z' });
    expect(psEntry({ ...resident, expiresAt: null }, undefined)['expires_at']).toBe('2318-01-01T00:00:00.000Z');
  });
});
