// Errors in the shape llama-server and OpenAI answer with: {"error":{"code","message","type"}}.
// One class so every handler fails the same way and clients (the openai SDK, the router)
// can tell a bad request from an unavailable or failed engine.

export type HttpErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'unavailable_error'
  | 'exceed_context_size_error'
  | 'not_supported_error'
  | 'server_error';

export class HttpError extends Error {
  override name = 'HttpError';
  constructor(readonly status: number, message: string, readonly type: HttpErrorType, readonly extra: Record<string, unknown> = {}) {
    super(message);
  }

  body(): { error: { code: number; message: string; type: HttpErrorType } & Record<string, unknown> } {
    return { error: { code: this.status, message: this.message, type: this.type, ...this.extra } };
  }
}

/** A 400; `param` names the field at fault, as OpenAI's errors do. */
export function badRequest(message: string, param?: string): HttpError {
  return new HttpError(400, message, 'invalid_request_error', param === undefined ? {} : { param });
}
