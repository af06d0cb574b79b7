// An error's words, as every log line, refusal and card quotes them: the message of an Error,
// else the value as text (a rejected string, a thrown number).

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
