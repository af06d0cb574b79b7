// The subset of OpenAI's Responses API that llmtray's endpoint speaks: `POST /v1/responses`,
// whole or streamed, as the `openai` SDK's `client.responses.create` sends it. Declared once here
// so that the router's translation, its tests and any client agree on the wire shapes (checked
// against OpenAI's published schemas in test/fixtures/openai-openapi/response-schemas.json).
// Types only, in OpenAI's own snake_case.

/** The request as the router reads it; every field it does not look at is refused or passed by the field table. */
export interface ResponsesRequest {
  model: string;
  input: string | unknown[];
  instructions?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  tools?: unknown[] | null;
  tool_choice?: unknown;
  parallel_tool_calls?: boolean | null;
  text?: { format?: unknown; verbosity?: unknown } | null;
  stream?: boolean | null;
  metadata?: Record<string, string> | null;
  include?: unknown[] | null;
  top_logprobs?: number | null;
  [field: string]: unknown;
}

/** A token's log probability, as the answer's output_text and the stream's text events carry it. */
export interface ResponseTokenLogprob {
  token: string;
  logprob: number;
  /** UTF-8 bytes of `token`. */
  bytes: number[];
  /** The likeliest tokens at this position, as many as `top_logprobs` asked. */
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export interface ResponseOutputText {
  type: 'output_text';
  text: string;
  annotations: [];
  /** Empty unless the request asked for them (`include: ['message.output_text.logprobs']` or `top_logprobs`). */
  logprobs: ResponseTokenLogprob[];
}

export interface ResponseReasoningText {
  type: 'reasoning_text';
  text: string;
}

/** A thinking model's reasoning (the chat API's `reasoning_content`), in full: there is no summary of it. */
export interface ResponseReasoningItem {
  type: 'reasoning';
  id: string;
  summary: [];
  content: ResponseReasoningText[];
  status: ResponseItemStatus;
}

export interface ResponseOutputMessage {
  type: 'message';
  id: string;
  status: ResponseItemStatus;
  role: 'assistant';
  content: ResponseOutputText[];
}

export interface ResponseFunctionCall {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: ResponseItemStatus;
}

export type ResponseItemStatus = 'in_progress' | 'completed' | 'incomplete';
export type ResponseOutputItem = ResponseReasoningItem | ResponseOutputMessage | ResponseFunctionCall;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** A tool as the answer repeats it: the request's function tool, every field OpenAI's schema requires present. */
export interface ResponseFunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
}

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: 'in_progress' | 'completed' | 'incomplete';
  error: null;
  incomplete_details: { reason: 'max_output_tokens' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: ResponseOutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: null;
  temperature: number | null;
  top_p: number | null;
  top_logprobs: number | null;
  text: { format: unknown };
  tool_choice: unknown;
  tools: ResponseFunctionTool[];
  truncation: 'disabled';
  metadata: Record<string, string>;
  /** Absent until the answer is finished (OpenAI's schema has no null for it). */
  usage?: ResponseUsage;
}

/** The stream's events, each with the `sequence_number` of its place in the stream (from 0). */
export type ResponseStreamEvent = { sequence_number: number } & (
  | { type: 'response.created' | 'response.in_progress' | 'response.completed' | 'response.incomplete'; response: ResponseObject }
  | { type: 'response.output_item.added' | 'response.output_item.done'; output_index: number; item: ResponseOutputItem }
  | { type: 'response.content_part.added' | 'response.content_part.done'; item_id: string; output_index: number; content_index: number; part: ResponseOutputText | ResponseReasoningText }
  | { type: 'response.output_text.delta'; item_id: string; output_index: number; content_index: number; delta: string; logprobs: ResponseTokenLogprob[] }
  | { type: 'response.output_text.done'; item_id: string; output_index: number; content_index: number; text: string; logprobs: ResponseTokenLogprob[] }
  | { type: 'response.reasoning_text.delta'; item_id: string; output_index: number; content_index: number; delta: string }
  | { type: 'response.reasoning_text.done'; item_id: string; output_index: number; content_index: number; text: string }
  | { type: 'response.function_call_arguments.delta'; item_id: string; output_index: number; delta: string }
  | { type: 'response.function_call_arguments.done'; item_id: string; output_index: number; name: string; arguments: string }
  | { type: 'error'; code: string | null; message: string; param: string | null }
);
