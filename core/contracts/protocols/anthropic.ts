// The subset of Anthropic's Messages API that llmtray's endpoint speaks: `POST /v1/messages`
// and `POST /v1/messages/count_tokens`, as Claude-style tools with a base URL setting send them.
// Declared once here so that the router's translator, its tests and any client agree on the
// wire shapes. Types only, in Anthropic's own snake_case; fields llmtray does not look at are
// carried through untouched to an engine that serves the API itself, hence the index signatures.

export type AnthropicRole = 'user' | 'assistant';

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  [field: string]: unknown;
}

/** A content block: text, or one of the kinds (image, tool_use, thinking, …) passed through to engines that serve the API. */
export type AnthropicContentBlock = AnthropicTextBlock | { type: string; [field: string]: unknown };

export interface AnthropicMessageParam {
  role: AnthropicRole;
  content: string | AnthropicContentBlock[];
}

/** Fields common to a Messages request and a token count. */
interface AnthropicPromptFields {
  model: string;
  messages: AnthropicMessageParam[];
  system?: string | AnthropicTextBlock[];
  [field: string]: unknown;
}

/** `POST /v1/messages` */
export interface AnthropicMessagesRequest extends AnthropicPromptFields {
  /** Required by the API: the most tokens the answer may have. */
  max_tokens: number;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stream?: boolean;
  metadata?: { user_id?: string | null; [field: string]: unknown };
}

/** `POST /v1/messages/count_tokens`: the same prompt, no generation settings. */
export type AnthropicCountTokensRequest = AnthropicPromptFields;

/** `POST /v1/messages/count_tokens`'s answer. */
export interface AnthropicTokenCount {
  input_tokens: number;
}

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal';

export interface AnthropicUsage {
  /** Prompt tokens evaluated for this answer; tokens read from the prompt cache are counted apart. */
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
}

/** `POST /v1/messages`'s answer, and the message a stream's `message_start` opens. */
export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  content: AnthropicContentBlock[];
  model: string;
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

/** The events of a streamed answer, in the order Anthropic sends them. */
export type AnthropicStreamEvent =
  | { type: 'message_start'; message: AnthropicMessage }
  | { type: 'content_block_start'; index: number; content_block: AnthropicContentBlock }
  | { type: 'content_block_delta'; index: number; delta: { type: 'text_delta'; text: string } | { type: string; [field: string]: unknown } }
  | { type: 'content_block_stop'; index: number }
  | {
      type: 'message_delta';
      delta: { stop_reason: AnthropicStopReason | null; stop_sequence: string | null };
      /** Cumulative for the whole message. */
      usage: { output_tokens: number; input_tokens?: number };
    }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | AnthropicErrorBody;

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

/**
 * Anthropic's error body, as an answer and as a stream's `error` event. `details.error_code`
 * is where the API (and its SDK's `errorCode`) puts a stable code naming the cause; llmtray
 * puts its own there ('model_quarantined', 'engine_hung', …).
 */
export interface AnthropicErrorBody {
  type: 'error';
  error: {
    type: AnthropicErrorType;
    /** A sentence a person can act on. */
    message: string;
    details?: { error_code: string };
  };
  request_id: string | null;
}
