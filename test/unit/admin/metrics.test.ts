import { describe, expect, it } from 'vitest';
import { escapeLabelValue, renderMetrics } from '../../../core/admin/metrics.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { fixtureSnapshot } from '../../support/fixture-snapshot.js';
import { RequestHistograms } from '../../../core/admin/request-histograms.js';
import { requestRecord } from '../../support/request-records.js';

interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Parsed {
  help: Map<string, string>;
  type: Map<string, string>;
  samples: ParsedSample[];
}

/**
 * A strict reader of the text exposition format (0.0.4): HELP and TYPE before a family's
 * samples, label values with their three escapes, one sample per line. Throws on anything else.
 */
function parseExposition(text: string): Parsed {
  const parsed: Parsed = { help: new Map(), type: new Map(), samples: [] };
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment !== null) {
      const [, kind, name, rest] = comment as unknown as [string, string, string, string];
      (kind === 'HELP' ? parsed.help : parsed.type).set(name, rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\'));
      continue;
    }
    const head = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
    if (head === null) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const name = head[1]!;
    // A histogram's samples are its name with _bucket, _sum or _count.
    const family = parsed.type.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    if (!parsed.type.has(family) || !parsed.help.has(family)) throw new Error(`${name} has a sample before its HELP and TYPE`);
    if (family !== name && parsed.type.get(family) !== 'histogram') throw new Error(`${name} is a histogram's sample of a ${parsed.type.get(family)}`);
    let i = name.length;
    const labels: Record<string, string> = {};
    if (line[i] === '{') {
      i++;
      while (line[i] !== '}') {
        const labelName = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(line.slice(i));
        if (labelName === null) throw new Error(`bad label in ${JSON.stringify(line)}`);
        i += labelName[0].length;
        let value = '';
        while (line[i] !== '"') {
          if (i >= line.length) throw new Error(`unterminated label value in ${JSON.stringify(line)}`);
          if (line[i] === '\\') {
            const escaped = line[i + 1];
            value += escaped === 'n' ? '\n' : escaped === '\\' ? '\\' : escaped === '"' ? '"' : (() => { throw new Error(`bad escape \\${escaped}`); })();
            i += 2;
          } else {
            value += line[i];
            i++;
          }
        }
        i++;
        labels[labelName[1]!] = value;
        if (line[i] === ',') i++;
      }
      i++;
    }
    if (line[i] !== ' ') throw new Error(`no space before the value in ${JSON.stringify(line)}`);
    const value = Number(line.slice(i + 1));
    if (Number.isNaN(value)) throw new Error(`bad value in ${JSON.stringify(line)}`);
    parsed.samples.push({ name, labels, value });
  }
  return parsed;
}

function withRevision(snapshot: Omit<Snapshot, 'revision'>): Snapshot {
  return { ...snapshot, revision: 1 };
}

function value(parsed: Parsed, name: string, labels: Record<string, string>): number | undefined {
  return parsed.samples.find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value;
}

const PER_MODEL = [
  'llmtray_model_desired',
  'llmtray_model_ready',
  'llmtray_model_pinned',
  'llmtray_model_in_flight',
  'llmtray_model_consecutive_failures',
  'llmtray_model_quarantined',
  'llmtray_model_unschedulable',
  'llmtray_model_catalog_error',
  'llmtray_model_measured_bytes',
];

describe('renderMetrics', () => {
  const snapshot = withRevision(fixtureSnapshot());
  const parsed = parseExposition(renderMetrics(snapshot));

  it('gives every catalog model every series, at 0 for a model with no server', () => {
    for (const name of PER_MODEL) {
      expect(parsed.type.get(name)).toBe('gauge');
      expect(parsed.samples.filter((s) => s.name === name).map((s) => s.labels.model).sort()).toEqual(snapshot.models.map((m) => m.id).sort());
    }
    const kev = { model: 'kev-0.5b' };
    expect(value(parsed, 'llmtray_model_desired', kev)).toBe(1);
    expect(value(parsed, 'llmtray_model_ready', kev)).toBe(0);
    expect(value(parsed, 'llmtray_model_quarantined', kev)).toBe(1);
    expect(value(parsed, 'llmtray_model_consecutive_failures', kev)).toBe(5);
    expect(value(parsed, 'llmtray_model_measured_bytes', kev)).toBe(0);
    for (const level of ['full', 'smaller-context', 'partial', 'minimal']) expect(value(parsed, 'llmtray_model_level', { model: 'kev-0.5b', level })).toBe(0);
  });

  it('reports the resident model as it is', () => {
    const llama = { model: 'llama-3.1-8b' };
    expect(value(parsed, 'llmtray_model_ready', llama)).toBe(1);
    expect(value(parsed, 'llmtray_model_in_flight', llama)).toBe(2);
    expect(value(parsed, 'llmtray_model_pinned', llama)).toBe(1);
    expect(value(parsed, 'llmtray_model_measured_bytes', llama)).toBe(5.5 * 1024 ** 3);
    expect(value(parsed, 'llmtray_model_level', { ...llama, level: 'full' })).toBe(1);
    expect(value(parsed, 'llmtray_model_level', { ...llama, level: 'smaller-context' })).toBe(0);
    expect(value(parsed, 'llmtray_model_estimate_bytes', { ...llama, level: 'smaller-context' })).toBe(4 * 1024 ** 3);
    expect(value(parsed, 'llmtray_model_estimate_bytes', { ...llama, level: 'partial' })).toBe(2 * 1024 ** 3);
    const states = parsed.samples.filter((s) => s.name === 'llmtray_model_state' && s.labels.model === 'llama-3.1-8b');
    expect(states).toHaveLength(10);
    expect(states.filter((s) => s.value === 1).map((s) => s.labels.state)).toEqual(['ready']);
  });

  it('reports the budget and each GPU', () => {
    const gpu = { gpu: '0', name: 'NVIDIA GeForce RTX 4090' };
    expect(value(parsed, 'llmtray_budget_bytes', {})).toBe(20 * 1024 ** 3);
    expect(value(parsed, 'llmtray_gpu_budget_bytes', gpu)).toBe(20 * 1024 ** 3);
    expect(value(parsed, 'llmtray_gpu_used_by_us_bytes', gpu)).toBe(6 * 1024 ** 3);
    expect(value(parsed, 'llmtray_gpu_used_by_others_bytes', gpu)).toBe(3 * 1024 ** 3);
    expect(value(parsed, 'llmtray_budget_mode', { mode: 'gpu' })).toBe(1);
    expect(parsed.samples.some((s) => s.name === 'llmtray_budget_limit_bytes')).toBe(false);
    const limited = parseExposition(renderMetrics({ ...snapshot, budget: { ...snapshot.budget, limitBytes: 16 * 1024 ** 3 } }));
    expect(value(limited, 'llmtray_budget_limit_bytes', {})).toBe(16 * 1024 ** 3);
  });

  it("says whether a GPU's vendor tool keeps failing, so an alert can fire while its budget is held", () => {
    const gpu = { gpu: '0', name: 'NVIDIA GeForce RTX 4090' };
    expect(value(parsed, 'llmtray_gpu_measure_failing', gpu)).toBe(0);
    const gpus = snapshot.budget.gpus.map((g) => ({ ...g, warning: 'Not measured for 3 samples in a row (4 s): nvidia-smi fails.' }));
    expect(value(parseExposition(renderMetrics({ ...snapshot, budget: { ...snapshot.budget, gpus } })), 'llmtray_gpu_measure_failing', gpu)).toBe(1);
  });

  it('escapes label values so an odd model id reads back unchanged', () => {
    const odd = snapshot.models[2]!.id;
    expect(odd).toBe('odd"name\\v1\nx');
    expect(value(parsed, 'llmtray_model_desired', { model: odd })).toBe(0);
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
  });

  it('has one sample per name and label set, and no secret from the snapshot', () => {
    const keys = parsed.samples.map((s) => `${s.name}${JSON.stringify(s.labels)}`);
    expect(new Set(keys).size).toBe(keys.length);
    const text = renderMetrics(snapshot);
    expect(text).not.toContain('40001');
  });

  it('is pure: the same snapshot gives the same text, and the snapshot is untouched', () => {
    const before = structuredClone(snapshot);
    expect(renderMetrics(snapshot)).toBe(renderMetrics(structuredClone(snapshot)));
    expect(snapshot).toEqual(before);
  });

  it('still declares every family with no models and no GPU', () => {
    const empty = parseExposition(renderMetrics({ ...snapshot, models: [], budget: { ...snapshot.budget, mode: 'cpu', gpus: [] } }));
    for (const name of [...PER_MODEL, 'llmtray_gpu_budget_bytes']) expect(empty.type.get(name)).toBe('gauge');
    expect(value(empty, 'llmtray_budget_mode', { mode: 'cpu' })).toBe(1);
  });
});

describe('renderMetrics: what requests cost', () => {
  const snapshot = withRevision(fixtureSnapshot());
  const models = new Set(['llama-3.1-8b', 'kev-0.5b']);

  function scrape(records: Parameters<RequestHistograms['observe']>[0][]): Parsed {
    const histograms = new RequestHistograms((id) => models.has(id));
    for (const record of records) histograms.observe(record);
    return parseExposition(renderMetrics(snapshot, histograms.models()));
  }

  it('counts each request by model and status, 429s and clients that left among them', () => {
    const parsed = scrape([
      requestRecord({ model: 'llama-3.1-8b', servedBy: 'llama-3.1-8b' }),
      requestRecord({ model: 'llama-3.1-8b', servedBy: 'llama-3.1-8b' }),
      requestRecord({ model: 'llama-3.1-8b', servedBy: null, status: 429, waited: null, firstTokenMs: null, tokensPerSecond: null }),
      requestRecord({ model: 'kev-0.5b', servedBy: 'kev-0.5b', status: 499 }),
    ]);
    expect(parsed.type.get('llmtray_requests_total')).toBe('counter');
    expect(value(parsed, 'llmtray_requests_total', { model: 'llama-3.1-8b', status: '200' })).toBe(2);
    expect(value(parsed, 'llmtray_requests_total', { model: 'llama-3.1-8b', status: '429' })).toBe(1);
    expect(value(parsed, 'llmtray_requests_total', { model: 'kev-0.5b', status: '499' })).toBe(1);
  });

  it('puts each time to first token, speed and wait in its cumulative buckets, with the sum and count', () => {
    const parsed = scrape([
      requestRecord({ model: 'llama-3.1-8b', servedBy: 'llama-3.1-8b', firstTokenMs: 80, tokensPerSecond: 30, waitMs: 0 }),
      requestRecord({ model: 'llama-3.1-8b', servedBy: 'llama-3.1-8b', firstTokenMs: 4000, tokensPerSecond: 45, waited: 'load', waitMs: 3500 }),
      // No first token and no speed (a refusal after a wait): only its wait is observed.
      requestRecord({ model: 'llama-3.1-8b', servedBy: null, status: 503, waited: 'load', waitMs: 45_000, firstTokenMs: null, tokensPerSecond: null }),
    ]);
    const m = { model: 'llama-3.1-8b' };
    expect(parsed.type.get('llmtray_request_first_token_seconds')).toBe('histogram');
    expect(value(parsed, 'llmtray_request_first_token_seconds_bucket', { ...m, le: '0.05' })).toBe(0);
    expect(value(parsed, 'llmtray_request_first_token_seconds_bucket', { ...m, le: '0.1' })).toBe(1);
    expect(value(parsed, 'llmtray_request_first_token_seconds_bucket', { ...m, le: '2.5' })).toBe(1);
    expect(value(parsed, 'llmtray_request_first_token_seconds_bucket', { ...m, le: '5' })).toBe(2);
    expect(value(parsed, 'llmtray_request_first_token_seconds_bucket', { ...m, le: '+Inf' })).toBe(2);
    expect(value(parsed, 'llmtray_request_first_token_seconds_count', m)).toBe(2);
    expect(value(parsed, 'llmtray_request_first_token_seconds_sum', m)).toBeCloseTo(4.08);
    expect(value(parsed, 'llmtray_request_tokens_per_second_bucket', { ...m, le: '20' })).toBe(0);
    expect(value(parsed, 'llmtray_request_tokens_per_second_bucket', { ...m, le: '50' })).toBe(2);
    expect(value(parsed, 'llmtray_request_wait_seconds_bucket', { ...m, le: '0.01' })).toBe(1);
    expect(value(parsed, 'llmtray_request_wait_seconds_bucket', { ...m, le: '5' })).toBe(2);
    expect(value(parsed, 'llmtray_request_wait_seconds_bucket', { ...m, le: '60' })).toBe(3);
    expect(value(parsed, 'llmtray_request_wait_seconds_count', m)).toBe(3);
  });

  it('has buckets that never fall as the bound grows, ending at the count', () => {
    const parsed = scrape([50, 120, 700, 3000, 90_000].map((firstTokenMs) => requestRecord({ model: 'kev-0.5b', servedBy: 'kev-0.5b', firstTokenMs })));
    const buckets = parsed.samples.filter((s) => s.name === 'llmtray_request_first_token_seconds_bucket' && s.labels.model === 'kev-0.5b').map((s) => s.value);
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b));
    expect(buckets.at(-1)).toBe(5);
    expect(value(parsed, 'llmtray_request_first_token_seconds_bucket', { model: 'kev-0.5b', le: '60' })).toBe(4);
  });

  it('leaves out a name no catalog model has, so a typo in a request does not become a series', () => {
    const parsed = scrape([requestRecord({ model: 'no-such-model', servedBy: null, status: 404 })]);
    expect(parsed.samples.some((s) => s.labels.model === 'no-such-model')).toBe(false);
    expect(parsed.type.get('llmtray_requests_total')).toBe('counter');
  });
});
