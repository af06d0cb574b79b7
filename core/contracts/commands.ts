// The commands a person can give, from the tray, the dashboard, the CLI or the HTTP API.
// One list, so every transport offers the same verbs and validates the same way.
import type { LogTail } from './log-lines.js';

export const MODEL_COMMANDS = ['pin', 'unpin', 'load', 'unload', 'retry'] as const;
export type ModelCommand = (typeof MODEL_COMMANDS)[number];

/**
 * Why a command was not carried out, when the reason is not the model's own state:
 * - unknown_command: the verb is not one of MODEL_COMMANDS (HTTP 400).
 * - unknown_model: no model has that id or alias (HTTP 404).
 * - action_failed: the action itself threw; a bug or an I/O failure, not a refusal (HTTP 500).
 * Absent on success and when the action declined for a reason it states (HTTP 409).
 */
export type CommandErrorCode = 'unknown_command' | 'unknown_model' | 'action_failed';

export interface CommandResult {
  ok: boolean;
  /** What happened, or why nothing did ("unknown model 'x'; models: a, b"). */
  message: string;
  /** Set only when ok is false for a reason other than the action declining. */
  code?: CommandErrorCode;
}

/** `GET /api/models/:id/logs`: the model server's recent log lines, oldest first, and the position after them. */
export interface ModelLogsResponse extends LogTail {
  modelId: string;
}

/** Every admin API refusal that is not a CommandResult (401, 404 route, 405, 500). */
export interface AdminErrorBody {
  error: { code: string; message: string };
}

export function isModelCommand(value: unknown): value is ModelCommand {
  return typeof value === 'string' && (MODEL_COMMANDS as readonly string[]).includes(value);
}
