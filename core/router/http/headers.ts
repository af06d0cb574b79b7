// The headers llmtray adds to every answer of the router's, which clients and people read (and
// CORS exposes, request-guard.ts): which model's server answered, and who refused (errors.ts
// says why the latter is a header). Their own leaf, because the transport (http/), the engine's
// side (engine/) and the protocols all write them.

/** The model whose server answered: the one asked for, or the fallback that served it. */
export const SERVED_BY_HEADER = 'x-llmtray-served-by';

/** Who refused a request: the router, or the engine behind it. */
export const ERROR_SOURCE_HEADER = 'x-llmtray-error-source';
