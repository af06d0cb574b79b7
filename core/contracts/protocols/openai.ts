// The subset of OpenAI's HTTP API that llmtray's endpoint speaks (and that llama-server's
// model servers speak behind it). Declared once here so that the router, the tests and any
// future client agree on the wire shapes. Types only: these are what crosses the socket, in
// OpenAI's own snake_case, and fields llmtray does not look at are carried through untouched,
// hence the index signatures on request bodies.

/** Who produced an error a client receives: llmtray's router itself, or the model server behind it. */
export type OpenAIErrorSource = 'router' | 'engine';

/** OpenAI's error body: `{ error: { message, type, param, code } }`. */
export interface OpenAIErrorBody {
  error: OpenAIError;
}

export interface OpenAIError {
  /** A sentence a person can act on. */
  message: string;
  /** OpenAI's category ('invalid_request_error', 'authentication_error', ...), or 'engine_error'. */
  type: string;
  /** The request field that was wrong, when one was. */
  param: string | null;
  /** A machine-readable code ('model_not_found', 'model_quarantined', ...), or null. */
  code: string | null;
}

export type OpenAIChatRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface OpenAIChatMessage {
  role: OpenAIChatRole;
  /** A string, or OpenAI's content parts (text, image_url, ...), passed through untouched. */
  content: string | unknown[] | null;
  name?: string;
  [field: string]: unknown;
}

/** Fields common to every generation request that llmtray validates before forwarding. */
interface OpenAIGenerationFields {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  n?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  [field: string]: unknown;
}

/** `POST /v1/chat/completions` */
export interface OpenAIChatCompletionRequest extends OpenAIGenerationFields {
  messages: OpenAIChatMessage[];
  max_completion_tokens?: number | null;
}

/** `POST /v1/completions` */
export interface OpenAICompletionRequest extends OpenAIGenerationFields {
  prompt: string | string[] | number[] | number[][];
}

/** `POST /v1/embeddings` */
export interface OpenAIEmbeddingRequest {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  [field: string]: unknown;
}

export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens?: number;
  total_tokens: number;
}

export interface OpenAIChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: 'assistant'; content: string | null; [field: string]: unknown };
    finish_reason: string | null;
  }[];
  usage?: OpenAIUsage;
}

/** One `data:` event of a streamed chat completion. */
export interface OpenAIChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string | null; [field: string]: unknown };
    finish_reason: string | null;
  }[];
  usage?: OpenAIUsage | null;
}

export interface OpenAICompletion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: { index: number; text: string; finish_reason: string | null }[];
  usage?: OpenAIUsage;
}

export interface OpenAIEmbeddingList {
  object: 'list';
  model: string;
  data: { object: 'embedding'; index: number; embedding: number[] | string }[];
  usage?: OpenAIUsage;
}

/** One entry of `GET /v1/models`; servers may add fields of their own beside these. */
export interface OpenAIModel {
  id: string;
  object: 'model';
  /** Epoch seconds. */
  created: number;
  owned_by: string;
}

/** `GET /v1/models`, generic over the entry so a server can describe its extra fields. */
export interface OpenAIModelList<Entry extends OpenAIModel = OpenAIModel> {
  object: 'list';
  data: Entry[];
}
