// The tray menu and icon state as plain data, built from the admin snapshot.
//
// Why plain data and not Electron's Menu: the menu is where a person reads what every model is
// doing, so its words are worth testing, and Electron cannot run here (or in any unit test).
// menu-template.ts turns these items into Electron's template in a few lines. Nothing here
// reads a clock or the platform: `now` and the settings come in through the context.
import type { ModelCommand } from '../core/contracts/commands.js';
import { isServing, SERVING_STATES, type ModelStateName } from '../core/contracts/model-status.js';
import type { BudgetView, ModelView, Snapshot } from '../core/contracts/snapshot.js';
import { assertNever } from './assert-never.js';
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
  copyEndpoint(endpoint: string): void;
  /** Fire and forget: main reports a refusal (CommandResult ok: false) itself. */
  runCommand(command: ModelCommand, modelId: string): void;
  openDashboard(): void;
  setStartAtLogin(enabled: boolean): void;
  quit(): void;
}

export interface TrayMenuContext {
  /** Whether the app starts when the person logs in, as the OS reports it now. */
  startAtLogin: boolean;
  /** Epoch ms, for countdowns and load times. */
  now: number;
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
    {
      type: 'normal',
      label: `Endpoint: ${snapshot.endpoint} (click to copy)`,
      enabled: true,
      click: () => actions.copyEndpoint(snapshot.endpoint),
    },
    { type: 'normal', label: memoryLine(snapshot.budget), enabled: false },
  ];
  for (const error of snapshot.configErrors.slice(0, 3)) {
    items.push({ type: 'normal', label: `Config problem: ${shorten(error, DETAIL_CHARS)}`, enabled: false, toolTip: error });
  }
  items.push({ type: 'separator' });
  if (snapshot.models.length === 0) {
    items.push(...emptyCatalogItems(snapshot));
  } else {
    for (const model of snapshot.models) items.push(modelItem(model, actions, context.now));
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

function emptyCatalogItems(snapshot: Snapshot): TrayMenuItem[] {
  const where = snapshot.modelDirs.length > 0 ? `Put .gguf files in ${snapshot.modelDirs.join(' or ')}` : 'Add a model directory';
  return [
    { type: 'normal', label: 'No models yet', enabled: false },
    { type: 'normal', label: shorten(where, DETAIL_CHARS), enabled: false },
    { type: 'normal', label: shorten(`or list models in ${snapshot.configPath}`, DETAIL_CHARS), enabled: false },
  ];
}

function modelItem(model: ModelView, actions: TrayActions, now: number): TrayMenuItem {
  const state = model.status.state;
  const submenu: TrayMenuItem[] = detailLines(model).map((line) => ({ type: 'normal', label: line, enabled: false }));
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
  return { type: 'submenu', label: `${model.id} — ${modelStateWords(model, now)}`, submenu, toolTip: model.path };
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
  switch (status.state) {
    case 'idle':
      return 'idle';
    case 'queued':
      return status.unschedulableReason !== null ? 'queued, does not fit now' : 'queued';
    case 'loading': {
      if (model.loading === null) return 'loading';
      if (model.loading.fraction !== null) return `loading ${Math.round(model.loading.fraction * 100)} %`;
      return `loading (${Math.max(0, Math.floor((now - model.loading.startedAt) / 1000))} s)`;
    }
    case 'ready':
      return status.level === 'minimal' ? 'ready on CPU' : status.level === 'partial' ? 'ready, part on CPU' : 'ready';
    case 'active':
      return model.inFlight > 0 ? `answering ${model.inFlight} request${model.inFlight === 1 ? '' : 's'}` : 'active';
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
    case 'degraded':
      return `degraded: ${LEVEL_WORDS[status.level ?? 'degraded']}`;
    case 'fallback':
      return status.servedBy !== null ? `answered by ${status.servedBy}` : 'fallback';
    case 'quarantined':
      return `quarantined: ${shorten(quarantineReason(model), LABEL_REASON_CHARS)}`;
    default:
      return assertNever(status.state);
  }
}

/** How far the ladder shrank a resident model, in the words "degraded: …" and "Level: …" use. */
const LEVEL_WORDS: Readonly<Record<LaunchLevel, string>> = {
  full: 'full',
  degraded: 'smaller context',
  partial: 'part on CPU',
  minimal: 'CPU only',
};

const FAILURE_WORDS: Readonly<Record<FailureKind, string>> = {
  none: '',
  crash: 'crashed',
  oom: 'out of memory',
  hang: 'not responding',
  invalid: 'cannot be loaded',
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

/** The disabled lines at the top of a model's submenu: why it is in its state, at what level. */
function detailLines(model: ModelView): string[] {
  const { status } = model;
  const lines: string[] = [];
  if (status.state === 'quarantined') {
    lines.push(`Reason: ${quarantineReason(model)}`, 'Fix the cause, then Retry');
  } else if (model.catalogError !== null) {
    lines.push(`Cannot read the file: ${model.catalogError}`);
  }
  if (status.state === 'failed' && status.recovery.lastError !== null) lines.push(`Last error: ${status.recovery.lastError}`);
  if (status.state === 'fallback' && status.servedBy !== null) lines.push(`Requests for ${model.id} are answered by ${status.servedBy}`);
  if (status.unschedulableReason !== null && status.state !== 'quarantined') lines.push(`Left out: ${status.unschedulableReason}`);
  if (isServing(status.state) && status.level !== null && status.level !== 'full') lines.push(`Level: ${LEVEL_WORDS[status.level]} (${status.level})`);
  return lines.map((line) => shorten(line, DETAIL_CHARS));
}

function memoryLine(budget: BudgetView): string {
  const what = budget.mode === 'cpu' ? 'Memory (no GPU)' : budget.mode === 'unified' ? 'Unified memory' : 'GPU memory';
  return `${what}: ${formatBytes(budget.usedBytes)} of ${formatBytes(budget.budgetBytes)} in use`;
}

/** The tray icon's state and tooltip. */
export function trayStatus(snapshot: Snapshot): { health: TrayHealth; tooltip: string } {
  const count = (states: readonly ModelStateName[]): number => snapshot.models.filter((m) => states.includes(m.status.state)).length;
  const resident = count(SERVING_STATES);
  const problems: string[] = [];
  for (const state of ['quarantined', 'failed', 'fallback', 'degraded'] as const) {
    const n = count([state]);
    if (n > 0) problems.push(`${n} ${state}`);
  }
  const unreadable = snapshot.models.filter((m) => m.catalogError !== null).length;
  if (unreadable > 0) problems.push(`${unreadable} unreadable`);
  if (snapshot.configErrors.length > 0) problems.push('config problem');
  const loading = count(['loading', 'queued', 'evicting']);
  const health: TrayHealth = problems.length > 0 ? 'problem' : loading > 0 ? 'loading' : 'ok';
  const parts = [
    `llmtray — ${resident} model${resident === 1 ? '' : 's'} resident`,
    `${formatBytes(snapshot.budget.usedBytes)} of ${formatBytes(snapshot.budget.budgetBytes)}`,
  ];
  if (loading > 0) parts.push(`${loading} loading`);
  if (problems.length > 0) parts.push(problems.join(', '));
  return { health, tooltip: shorten(parts.join(' · '), TOOLTIP_CHARS) };
}

/** The first line of `text`, whitespace collapsed, cut at a word to at most `max` characters with "…". */
export function shorten(text: string, max: number): string {
  const line = (text.split('\n').find((l) => l.trim() !== '') ?? '').replace(/\s+/g, ' ').trim();
  if (line.length <= max) return line;
  const cut = line.slice(0, max - 1);
  const atWord = cut.lastIndexOf(' ');
  return `${(atWord > max / 2 ? cut.slice(0, atWord) : cut).trimEnd()}…`;
}
