// The tray menu and icon state as plain data, built from the admin snapshot.
//
// Why plain data and not Electron's Menu: the menu is where a person reads what every model is
// doing, so its words are worth testing, and Electron cannot run here (or in any unit test).
// menu-template.ts turns these items into Electron's template in a few lines. Nothing here
// reads a clock or the platform: `now` and the settings come in through the context.
import type { ModelCommand } from '../core/contracts/commands.js';
import { isFinished, type PullView } from '../core/contracts/hub/pulls.js';
import { ATTENTION_WORDS, attentionWord, CHANGING_STATES, isResident, type ModelStateName } from '../core/contracts/model-status.js';
import type { BudgetView, GpuView, ModelView, Snapshot } from '../core/contracts/snapshot.js';
import {
  draftingFor,
  gpuSummaryWords,
  heldPartWords,
  heldParts,
  loadProgressWords,
  placementWords,
  reasonLines,
  residentCount,
  shorten,
} from '../core/contracts/snapshot-words.js';
import { assertNever } from '../core/contracts/assert-never.js';
import { formatBytes } from '../core/contracts/format-bytes.js';
import type { LaunchLevel } from '../core/contracts/launch-level.js';
import type { FailureKind, RecoveryAction } from '../core/contracts/recovery.js';

/** The subset of Electron's MenuItemConstructorOptions the tray uses. */
export type TrayMenuItem =
  | { type: 'normal'; label: string; enabled: boolean; click?: () => void; toolTip?: string }
  | { type: 'checkbox'; label: string; checked: boolean; enabled: boolean; click: () => void }
  | { type: 'separator' }
  | { type: 'submenu'; label: string; submenu: TrayMenuItem[]; toolTip?: string };

/** What the menu's items do; main.ts wires them to the admin service, the clipboard and the app. */
export interface TrayActions {
  /** Puts `text` on the clipboard: the endpoint, or a reason too long for a menu line. */
  copyText(text: string): void;
  /** Fire and forget: main reports a refusal (CommandResult ok: false) itself. */
  runCommand(command: ModelCommand, modelId: string): void;
  openDashboard(): void;
  /** Fire and forget: stops a pull from the Hugging Face Hub (its bytes stay for a later pull). */
  cancelPull(id: string): void;
  setStartAtLogin(enabled: boolean): void;
  quit(): void;
}

export interface TrayMenuContext {
  /** Whether the app starts when the person logs in, as the OS reports it now. */
  startAtLogin: boolean;
  /** Epoch ms, for countdowns and load times. */
  now: number;
  /** The pulls main has heard of (PullProgressed); the running ones get a line each, a click cancels. */
  pulls?: readonly PullView[];
}

export type TrayHealth = 'ok' | 'loading' | 'problem';

/** Longest state text in a model's own menu label; the full text is one level down. */
const LABEL_REASON_CHARS = 48;
/** Longest line inside a model's submenu. Menus do not wrap, and a 300-character llama.cpp error would make one screen wide. */
const DETAIL_CHARS = 100;
/** Windows cuts tray tooltips at 127 characters (NOTIFYICONDATA.szTip), mid-word; we cut first, at a word. */
const TOOLTIP_CHARS = 127;

export function buildTrayMenu(snapshot: Snapshot, actions: TrayActions, context: TrayMenuContext): TrayMenuItem[] {
  const items: TrayMenuItem[] = [
    ...endpointItems(snapshot, actions),
    { type: 'normal', label: memoryLine(snapshot.budget), enabled: false },
    ...snapshot.budget.gpus.map((gpu) => gpuItem(gpu, snapshot.models)),
    // A GPU that is gone has no budget to show, only why: by name, as its warning would be.
    ...(snapshot.budget.goneGpus ?? []).map((gpu): TrayMenuItem => ({ type: 'normal', label: shorten(gpu.reason, DETAIL_CHARS), enabled: false, toolTip: gpu.reason })),
  ];
  // What each busy model is doing with requests, at a glance, above the per-model submenus.
  for (const model of snapshot.models) {
    const line = requestsLine(model);
    if (line !== null) items.push({ type: 'normal', label: line, enabled: false });
  }
  for (const error of snapshot.configErrors.slice(0, 3)) {
    items.push({ type: 'normal', label: `Config problem: ${shorten(error, DETAIL_CHARS)}`, enabled: false, toolTip: error });
  }
  items.push({ type: 'separator' });
  const pulling = (context.pulls ?? []).filter((pull) => !isFinished(pull));
  for (const pull of pulling) {
    items.push({ type: 'normal', label: shorten(`Pulling ${pull.id}: ${pullProgressWords(pull)} (click to cancel)`, DETAIL_CHARS), enabled: true, click: () => actions.cancelPull(pull.id) });
  }
  if (pulling.length > 0) items.push({ type: 'separator' });
  if (snapshot.models.length === 0) {
    items.push(...emptyCatalogItems(snapshot));
  } else {
    for (const model of snapshot.models) items.push(modelItem(model, snapshot, actions, context.now));
  }
  items.push(
    { type: 'separator' },
    { type: 'normal', label: 'Open Dashboard', enabled: true, click: () => actions.openDashboard() },
    {
      type: 'checkbox',
      label: 'Start at Login',
      checked: context.startAtLogin,
      enabled: true,
      click: () => actions.setStartAtLogin(!context.startAtLogin),
    },
    { type: 'separator' },
    { type: 'normal', label: 'Quit llmtray', enabled: true, click: () => actions.quit() },
  );
  return items;
}

/**
 * "demo-chat: 2 in flight, 1 waiting" for a model with requests in flight or waiting (for its
 * load, for room, for its turn); null for one with none. Both counts are said even at 0 once the
 * model is busy, so "0 waiting" tells a person nothing queues behind it.
 */
export function requestsLine(model: Pick<ModelView, 'id' | 'inFlight' | 'waiting'>): string | null {
  if (model.inFlight === 0 && model.waiting === 0) return null;
  return `${model.id}: ${model.inFlight} in flight, ${model.waiting} waiting`;
}

/**
 * Where apps connect, each a click from the clipboard: this machine's base URL, then the ones
 * other machines use in LAN mode; and, when the router asks for a key, that a pasted URL alone
 * gets 401 (the keys stay out of the snapshot, so the menu can only say where they are).
 */
function endpointItems(snapshot: Snapshot, actions: TrayActions): TrayMenuItem[] {
  const copyable = (label: string, url: string): TrayMenuItem => ({ type: 'normal', label: `${label}: ${url} (click to copy)`, enabled: true, click: () => actions.copyText(url) });
  const items = [copyable('Endpoint', snapshot.endpoint), ...snapshot.networkEndpoints.map((url) => copyable('Network endpoint', url))];
  if (snapshot.keysRequired) {
    const label = snapshot.clientKeyNames.length > 0 ? 'Apps need a client key (listen.clientKeys)' : 'No client key in listen.clientKeys: the endpoint serves nobody';
    items.push({ type: 'normal', label, enabled: false, toolTip: snapshot.configPath });
  }
  return items;
}

function emptyCatalogItems(snapshot: Snapshot): TrayMenuItem[] {
  const where = snapshot.modelDirs.length > 0 ? `Put .gguf files in ${snapshot.modelDirs.join(' or ')}` : 'Add a model directory';
  return [
    { type: 'normal', label: 'No models yet', enabled: false },
    { type: 'normal', label: shorten(where, DETAIL_CHARS), enabled: false },
    { type: 'normal', label: shorten(`or list models in ${snapshot.configPath}`, DETAIL_CHARS), enabled: false },
  ];
}

/**
 * One GPU as a submenu: what our models hold of its budget in the label, and inside, each model
 * with its draft right after it, then other programs and the reserve, so a person sees per GPU
 * which model holds what (the dashboard draws the same holders as a bar).
 */
function gpuItem(gpu: GpuView, models: readonly ModelView[]): TrayMenuItem {
  const line = (label: string): TrayMenuItem => ({ type: 'normal', label, enabled: false });
  const held = heldParts(gpu.holders, models).map((part) => line(heldPartWords(part)));
  const others = gpu.holders.filter((h) => h.kind === 'other-programs').reduce((sum, h) => sum + h.bytes, 0);
  return {
    type: 'submenu',
    label: shorten(gpuSummaryWords(gpu), DETAIL_CHARS),
    submenu: [
      ...(gpu.warning === undefined ? [] : [line(shorten(gpu.warning, DETAIL_CHARS)), { type: 'separator' as const }]),
      ...(held.length > 0 ? held : [line('No model on it')]),
      { type: 'separator' },
      ...(others > 0 ? [line(`Other programs ${formatBytes(others)}`)] : []),
      line(`Reserve ${formatBytes(gpu.reserveBytes)}`),
    ],
  };
}

function modelItem(model: ModelView, snapshot: Snapshot, actions: TrayActions, now: number): TrayMenuItem {
  const state = model.status.state;
  const submenu: TrayMenuItem[] = detailItems(model, snapshot, actions);
  if (submenu.length > 0) submenu.push({ type: 'separator' });
  submenu.push({
    type: 'checkbox',
    label: 'Pinned',
    checked: model.pinned,
    enabled: true,
    // From the snapshot, not the item: Electron flips a checkbox before calling click.
    click: () => actions.runCommand(model.pinned ? 'unpin' : 'pin', model.id),
  });
  const command = primaryCommand(state);
  submenu.push({ type: 'normal', label: COMMAND_LABELS[command], enabled: true, click: () => actions.runCommand(command, model.id) });
  // A draft in its target's engine has no state of its own: "idle" was said of one decoding every answer (issue 35).
  const targets = draftingFor(model, snapshot).map((target) => target.id);
  const words = targets.length > 0 ? `drafting for ${targets.join(' and ')}` : modelStateWords(model, now);
  return { type: 'submenu', label: `${model.id} — ${words}`, submenu, toolTip: model.path };
}

const COMMAND_LABELS: Readonly<Record<'load' | 'unload' | 'retry', string>> = {
  load: 'Load',
  unload: 'Unload',
  retry: 'Retry',
};

/**
 * The one action next to Pinned. Retry for a quarantined model (nothing else brings it back);
 * Load for one that is not resident nor wanted; Unload for every state in which it is resident
 * or being worked on — for a failing or queued model that means "stop trying".
 */
export function primaryCommand(state: ModelStateName): 'load' | 'unload' | 'retry' {
  switch (state) {
    case 'quarantined':
      return 'retry';
    case 'idle':
    case 'evicting':
      return 'load';
    case 'queued':
    case 'loading':
    case 'ready':
    case 'active':
    case 'failed':
    case 'degraded':
    case 'fallback':
      return 'unload';
    default:
      return assertNever(state);
  }
}

/** What a model is doing, in the words of its menu label: "ready", "loading 42 %", "quarantined: …". */
export function modelStateWords(model: ModelView, now: number): string {
  const { status } = model;
  switch (status.phase) {
    case 'idle':
      return 'idle';
    case 'queued':
      return status.unschedulableReason !== null ? 'queued, does not fit now' : 'queued';
    case 'loading':
      // The dashboard's card says the same words (one formatter in core/contracts).
      return model.loading === null ? 'loading' : loadProgressWords(model.loading, now);
    case 'serving':
      return servingWords(model);
    case 'evicting':
      return 'unloading';
    case 'failed': {
      const cause = FAILURE_WORDS[status.recovery.kind];
      const next = status.recovery.nextAttemptAt;
      const then =
        next !== null && status.recovery.nextAction !== null
          ? `${NEXT_ACTION_WORDS[status.recovery.nextAction]} in ${Math.max(0, Math.ceil((next - now) / 1000))} s`
          : status.next;
      return ['failed', cause].filter(Boolean).join(': ') + (then ? `, ${then}` : '');
    }
    case 'fallback':
      return status.servedBy !== null ? `answered by ${status.servedBy}` : 'fallback';
    case 'quarantined':
      return `quarantined: ${shorten(quarantineReason(model), LABEL_REASON_CHARS)}`;
    default:
      return assertNever(status.phase);
  }
}

/**
 * A serving model's words: whether it answers now and, below the full level, how far the ladder
 * shrank it; both at once for a degraded model that answers ("answering 1 request, degraded:
 * part on CPU"), which the one state word cannot say.
 */
function servingWords(model: ModelView): string {
  const { level, busy } = model.status;
  const degraded = level !== null && level !== 'full' ? `degraded: ${LEVEL_WORDS[level]}` : null;
  if (!busy) return degraded ?? 'ready';
  const answering = model.inFlight > 0 ? `answering ${model.inFlight} request${model.inFlight === 1 ? '' : 's'}` : 'active';
  return degraded === null ? answering : `${answering}, ${degraded}`;
}

/** How far the ladder shrank a resident model, in the words "degraded: …" and "Level: …" use. */
const LEVEL_WORDS: Readonly<Record<LaunchLevel, string>> = {
  full: 'full',
  'smaller-context': 'smaller context',
  partial: 'part on CPU',
  minimal: 'CPU only',
};

/** The level in words, with the name the API and logs use where the words do not already say it ("part on CPU (partial)", not "smaller context (smaller-context)"). */
function levelLine(level: LaunchLevel): string {
  const words = LEVEL_WORDS[level];
  return words.replaceAll(' ', '-') === level ? words : `${words} (${level})`;
}

const FAILURE_WORDS: Readonly<Record<FailureKind, string>> = {
  none: '',
  crash: 'crashed',
  oom: 'out of memory',
  hang: 'not responding',
  invalid: 'cannot be loaded',
  environment: 'waiting on the machine',
};

const NEXT_ACTION_WORDS: Readonly<Record<RecoveryAction, string>> = {
  retry: 'retrying',
  degrade: 'retrying smaller',
  fallback: 'falling back',
  quarantine: 'quarantining',
};

function quarantineReason(model: ModelView): string {
  return model.catalogError ?? model.status.recovery.lastError ?? model.status.unschedulableReason ?? 'see the dashboard for its log';
}

/**
 * The items at the top of a model's submenu: why it is in its state, where it runs, and what it
 * answers for. A menu line does not wrap, so a long reason is cut into lines of DETAIL_CHARS;
 * whenever one was cut, "Copy the full reason" puts the whole text on the clipboard (a menu
 * item's tooltip shows on macOS only).
 */
function detailItems(model: ModelView, snapshot: Snapshot, actions: TrayActions): TrayMenuItem[] {
  const { status } = model;
  const items: TrayMenuItem[] = [];
  const lines = (texts: readonly string[], full: string, copyLabel: string): void => {
    const shown = texts.map((text) => shorten(text, DETAIL_CHARS));
    for (const label of shown) items.push({ type: 'normal', label, enabled: false, toolTip: full });
    if (shown.some((label, i) => label !== texts[i])) items.push({ type: 'normal', label: copyLabel, enabled: true, click: () => actions.copyText(full) });
  };
  if (status.state === 'quarantined') {
    const reason = quarantineReason(model);
    lines([`Reason: ${reason}`], reason, 'Copy the full reason');
    items.push({ type: 'normal', label: 'Fix the cause, then Retry', enabled: false });
  } else if (model.catalogError !== null) {
    lines([`Cannot read the file: ${model.catalogError}`], model.catalogError, 'Copy the full reason');
  }
  if (status.state === 'failed' && status.recovery.lastError !== null) lines([`Last error: ${status.recovery.lastError}`], status.recovery.lastError, 'Copy the full error');
  if (status.state === 'fallback' && status.servedBy !== null) items.push(disabled(`Requests for ${model.id} are answered by ${status.servedBy}`));
  for (const other of answersFor(model, snapshot.models)) items.push(disabled(`Answers for ${other}, which is in fallback`));
  if (status.unschedulableReason !== null && status.state !== 'quarantined') {
    const [first = '', ...rest] = reasonLines(status.unschedulableReason);
    lines([`Left out: ${first}`, ...rest], status.unschedulableReason, 'Copy the full reason');
  }
  // Without a GPU every model is on the CPU, which the memory line already says.
  if (isResident(status.state) && model.placement !== null && snapshot.budget.mode !== 'cpu') {
    items.push(disabled(`Placement: ${placementWords(model.placement, { mode: snapshot.budget.mode, layerCount: model.layerCount })}`));
  }
  if (status.phase === 'serving' && status.level !== null && status.level !== 'full') items.push(disabled(`Level: ${levelLine(status.level)}`));
  return items;
}

function disabled(label: string): TrayMenuItem {
  return { type: 'normal', label: shorten(label, DETAIL_CHARS), enabled: false };
}

/** The models in fallback that this one answers for: it stays loaded while they are wanted. */
function answersFor(model: ModelView, models: readonly ModelView[]): string[] {
  return models.filter((other) => other.id !== model.id && other.status.state === 'fallback' && other.status.servedBy === model.id).map((other) => other.id);
}

function memoryLine(budget: BudgetView): string {
  const what = budget.mode === 'cpu' ? 'Memory (no GPU)' : budget.mode === 'unified' ? 'Unified memory' : 'GPU memory';
  return `${what}: ${formatBytes(budget.usedBytes)} of ${formatBytes(budget.budgetBytes)} in use`;
}

/** A running pull in a few words: its share and time left, or its state before bytes come. */
function pullProgressWords(pull: PullView): string {
  if (pull.state !== 'downloading' || pull.totalBytes <= 0) return pull.state;
  const percent = Math.floor((pull.receivedBytes / pull.totalBytes) * 100);
  return pull.secondsLeft === null ? `${percent} %` : `${percent} %, ${pull.secondsLeft} s left`;
}

/** The tray icon's state and tooltip; the running pulls from the Hugging Face Hub are said last. */
export function trayStatus(snapshot: Snapshot, pulls: readonly PullView[] = []): { health: TrayHealth; tooltip: string } {
  const count = (states: readonly ModelStateName[]): number => snapshot.models.filter((m) => states.includes(m.status.state)).length;
  const resident = residentCount(snapshot.models);
  const problems: string[] = [];
  const attention = snapshot.models.map((m) => attentionWord(m.status));
  for (const word of ATTENTION_WORDS) {
    const n = attention.filter((w) => w === word).length;
    if (n > 0) problems.push(`${n} ${word}`);
  }
  const unreadable = snapshot.models.filter((m) => m.catalogError !== null).length;
  if (unreadable > 0) problems.push(`${unreadable} unreadable`);
  if (snapshot.configErrors.length > 0) problems.push('config problem');
  const loading = count(CHANGING_STATES);
  const health: TrayHealth = problems.length > 0 ? 'problem' : loading > 0 ? 'loading' : 'ok';
  const parts = [
    `llmtray — ${resident} model${resident === 1 ? '' : 's'} resident`,
    `${formatBytes(snapshot.budget.usedBytes)} of ${formatBytes(snapshot.budget.budgetBytes)}`,
  ];
  if (loading > 0) parts.push(`${loading} loading`);
  if (problems.length > 0) parts.push(problems.join(', '));
  const pulling = pulls.filter((pull) => !isFinished(pull));
  if (pulling.length > 0) parts.push(`pulling ${pulling.map((pull) => `${pull.id.replace(/^hf\.co\//, '')} ${pullProgressWords(pull)}`).join(', ')}`);
  return { health, tooltip: shorten(parts.join(' · '), TOOLTIP_CHARS) };
}

/** The tooltip while the daemon starts: the icon is shown at once, before the first snapshot. */
export const STARTING_TOOLTIP = 'llmtray — starting…';

/** The menu while the daemon starts: what is happening, and Quit (which stops whatever has started). */
export function startingTrayMenu(actions: Pick<TrayActions, 'quit'>): TrayMenuItem[] {
  return [{ type: 'normal', label: 'Starting…', enabled: false }, { type: 'separator' }, { type: 'normal', label: 'Quit llmtray', enabled: true, click: actions.quit }];
}
