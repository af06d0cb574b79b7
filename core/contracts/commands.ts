// The commands a person can give, from the tray, the dashboard, the CLI or the HTTP API.
// One list, so every transport offers the same verbs and validates the same way.

export const MODEL_COMMANDS = ['pin', 'unpin', 'load', 'unload', 'retry'] as const;
export type ModelCommand = (typeof MODEL_COMMANDS)[number];

export interface CommandResult {
  ok: boolean;
  /** What happened, or why nothing did ("unknown model 'x'; models: a, b"). */
  message: string;
}

export function isModelCommand(value: unknown): value is ModelCommand {
  return typeof value === 'string' && (MODEL_COMMANDS as readonly string[]).includes(value);
}
