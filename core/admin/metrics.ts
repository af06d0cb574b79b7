// `/metrics` in Prometheus' text exposition format (version 0.0.4), as a pure function of the
// snapshot and the request histograms: no registry, so what Prometheus scrapes can never
// disagree with what the dashboard shows. The one thing counted on the side is what requests
// cost (request-histograms.ts), since no snapshot could say it: it only grows.
//
// Every catalog model has every per-model series on every scrape, at 0 when it has no server.
// The incident (seeds/001): the one alert for "a model that should run has nothing serving"
// could never fire, because the ready series was published only while a replica was up, so
// a model that failed 155 times in a row simply had no series. Here `desired == 1 and
// ready == 0` is an expression that works.
import { isServing, MODEL_STATE_NAMES } from '../contracts/model-status.js';
import type { ModelView, Snapshot } from '../contracts/snapshot.js';
import { LAUNCH_LEVELS } from '../contracts/launch-level.js';
import type { Histogram, ModelRequestMetrics } from './request-histograms.js';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;

interface Sample {
  labels: Labels;
  value: number;
  /** A histogram's `_bucket`, `_sum` or `_count`; none for a gauge's or counter's sample. */
  suffix?: '_bucket' | '_sum' | '_count';
}

interface Family {
  name: string;
  help: string;
  /** Default gauge. */
  type?: 'gauge' | 'counter' | 'histogram';
  samples: Sample[];
}

/** The whole exposition for one scrape. Pure; families in a fixed order, models sorted by id. */
export function renderMetrics(snapshot: Snapshot, requests: ReadonlyMap<string, ModelRequestMetrics> = new Map()): string {
  return [...metricFamilies(snapshot), ...requestFamilies(requests)].map(renderFamily).join('');
}

/** The request histograms and counts, per model that had a request (a model with none has no series: no request, nothing observed). */
function requestFamilies(requests: ReadonlyMap<string, ModelRequestMetrics>): Family[] {
  const models = [...requests.keys()].sort();
  const histogramOf = (name: string, help: string, pick: (m: ModelRequestMetrics) => Histogram): Family => ({
    name,
    help,
    type: 'histogram',
    samples: models.flatMap((model) => histogramSamples({ model }, pick(requests.get(model) as ModelRequestMetrics))),
  });
  return [
    {
      name: 'llmtray_requests_total',
      help: 'Requests to the model that ended, by HTTP status (429: refused for its queue limit; 499: the client left first).',
      type: 'counter',
      samples: models.flatMap((model) =>
        [...(requests.get(model) as ModelRequestMetrics).byStatus].sort(([a], [b]) => (a < b ? -1 : 1)).map(([status, value]) => ({ labels: { model, status }, value })),
      ),
    },
    histogramOf('llmtray_request_first_token_seconds', "Time from a request's arrival to the first token of its answer, seconds (its wait for a load included).", (m) => m.firstTokenSeconds),
    histogramOf('llmtray_request_tokens_per_second', "The generation's speed of each answer, tokens per second.", (m) => m.tokensPerSecond),
    histogramOf('llmtray_request_wait_seconds', 'Time a request waited for an engine (a load, room, its turn), seconds; 0 when taken at once.', (m) => m.waitSeconds),
  ];
}

function histogramSamples(labels: Labels, h: Histogram): Sample[] {
  return [
    ...h.bounds.map((bound, i) => ({ labels: { ...labels, le: String(bound) }, value: h.counts[i] ?? 0, suffix: '_bucket' as const })),
    { labels: { ...labels, le: '+Inf' }, value: h.count, suffix: '_bucket' },
    { labels, value: h.sum, suffix: '_sum' },
    { labels, value: h.count, suffix: '_count' },
  ];
}

function metricFamilies(snapshot: Snapshot): Family[] {
  const models = [...snapshot.models].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const perModel = (name: string, help: string, value: (model: ModelView) => number): Family => ({
    name,
    help,
    samples: models.map((model) => ({ labels: { model: model.id }, value: value(model) })),
  });
  const { budget } = snapshot;
  const perGpu = (name: string, help: string, value: (gpu: Snapshot['budget']['gpus'][number]) => number): Family => ({
    name,
    help,
    samples: budget.gpus.map((gpu) => ({ labels: { gpu: String(gpu.index), name: gpu.name }, value: value(gpu) })),
  });
  const flag = (condition: boolean): number => (condition ? 1 : 0);

  return [
    perModel('llmtray_model_desired', 'Whether llmtray wants the model resident now (pinned, requested, or used within its idle TTL): 1 or 0.', (m) => flag(m.desired)),
    perModel('llmtray_model_ready', "Whether the model's own server is up and answering (ready, active or degraded): 1 or 0.", (m) => flag(isServing(m.status.state))),
    perModel('llmtray_model_pinned', 'Whether the person pinned the model so it stays resident: 1 or 0.', (m) => flag(m.pinned)),
    perModel('llmtray_model_in_flight', 'Requests the router is serving or holding for the model now.', (m) => m.inFlight),
    perModel('llmtray_model_consecutive_failures', 'Launch failures in a row since the last success.', (m) => m.status.recovery.attempts),
    perModel('llmtray_model_quarantined', 'Whether the model is quarantined (not launched again until retried or redefined): 1 or 0.', (m) => flag(m.status.state === 'quarantined')),
    perModel('llmtray_model_unschedulable', 'Whether the last plan left the model out for lack of memory: 1 or 0.', (m) => flag(m.status.unschedulableReason !== null)),
    perModel('llmtray_model_catalog_error', 'Whether the catalog could not read the model (missing or corrupt file): 1 or 0.', (m) => flag(m.catalogError !== null)),
    {
      name: 'llmtray_model_state',
      help: 'The model state, one series per state name: 1 for the current state, 0 for the others.',
      samples: models.flatMap((m) => MODEL_STATE_NAMES.map((state) => ({ labels: { model: m.id, state }, value: flag(m.status.state === state) }))),
    },
    {
      name: 'llmtray_model_level',
      help: 'The launch level the model runs or launches at, one series per level: 1 for the current one; all 0 when it is not resident.',
      samples: models.flatMap((m) => LAUNCH_LEVELS.map((level) => ({ labels: { model: m.id, level }, value: flag(m.status.level === level) }))),
    },
    {
      name: 'llmtray_model_estimate_bytes',
      help: 'Estimated device memory of the model (with its draft) at each launch level, bytes.',
      samples: models.flatMap((m) => LAUNCH_LEVELS.map((level) => ({ labels: { model: m.id, level }, value: m.estimateBytes[level] }))),
    },
    perModel('llmtray_model_measured_bytes', 'Memory the running server was measured to use, bytes; 0 while not measured.', (m) => m.measuredBytes ?? 0),
    { name: 'llmtray_budget_bytes', help: 'The memory budget the policy schedules against, bytes.', samples: [{ labels: {}, value: budget.budgetBytes }] },
    { name: 'llmtray_budget_used_bytes', help: "Sum of resident models' footprints, bytes.", samples: [{ labels: {}, value: budget.usedBytes }] },
    {
      name: 'llmtray_budget_limit_bytes',
      help: 'The hard budget limit set in the config, bytes; absent when none is set.',
      samples: budget.limitBytes === null ? [] : [{ labels: {}, value: budget.limitBytes }],
    },
    {
      name: 'llmtray_budget_mode',
      help: "Where models run: 'gpu', 'cpu' (host RAM) or 'unified' (Apple Silicon); 1 for the current mode.",
      samples: (['gpu', 'cpu', 'unified'] as const).map((mode) => ({ labels: { mode }, value: flag(budget.mode === mode) })),
    },
    { name: 'llmtray_host_memory_total_bytes', help: 'Host RAM, bytes.', samples: [{ labels: {}, value: budget.hostTotalBytes }] },
    { name: 'llmtray_host_memory_available_bytes', help: 'Host RAM available to new allocations, bytes.', samples: [{ labels: {}, value: budget.hostAvailableBytes }] },
    perGpu('llmtray_gpu_total_bytes', 'Device memory of the GPU, bytes.', (g) => g.totalBytes),
    perGpu('llmtray_gpu_budget_bytes', "The GPU's share of the budget: total - reserve - used by other programs, bytes.", (g) => g.budgetBytes),
    perGpu('llmtray_gpu_used_by_us_bytes', "Device memory held by llmtray's model servers, bytes.", (g) => g.usedByUsBytes),
    perGpu('llmtray_gpu_used_by_others_bytes', 'Device memory held by other programs and the driver, bytes.', (g) => g.usedByOthersBytes),
    perGpu('llmtray_gpu_reserve_bytes', 'Device memory kept free on purpose (the configured reserve), bytes.', (g) => g.reserveBytes),
    perGpu(
      'llmtray_gpu_measure_failing',
      "Whether the GPU's vendor tool keeps failing, so its budget is held at the last good sample (the snapshot's warning says why): 1 or 0.",
      (g) => flag(g.warning !== undefined),
    ),
    {
      name: 'llmtray_gpu_gone',
      help: "A GPU its vendor tool can no longer reach (fallen off the bus, not back from a suspend): no budget, its models run elsewhere (the snapshot's goneGpus says why); 1 while gone, absent otherwise.",
      samples: (budget.goneGpus ?? []).map((gpu) => ({ labels: { gpu: String(gpu.index), name: gpu.name }, value: 1 })),
    },
    { name: 'llmtray_config_errors', help: 'Config problems that kept the config in force running (the last good content of the file, or the defaults); 0 when the config is fine.', samples: [{ labels: {}, value: snapshot.configErrors.length }] },
    { name: 'llmtray_start_time_seconds', help: 'When the daemon started, seconds since the Unix epoch.', samples: [{ labels: {}, value: snapshot.startedAt / 1000 }] },
  ];
}

function renderFamily(family: Family): string {
  const lines = [`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type ?? 'gauge'}`];
  for (const sample of family.samples) lines.push(`${family.name}${sample.suffix ?? ''}${renderLabels(sample.labels)} ${renderValue(sample.value)}`);
  return `${lines.join('\n')}\n`;
}

function renderLabels(labels: Labels): string {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabelValue(value)}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

/** The format's escapes for a label value: backslash, double quote and line feed. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escapes backslash and line feed (not quotes). */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function renderValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}
