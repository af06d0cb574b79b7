// How long a model server with requests in flight may make no progress before it is judged hung
// (see supervisor/hang/hang-watch.ts). One figure for the config's default and the supervisor's.
//
// Why 60 s: longer than the slowest single prompt batch of anything a workstation runs at usable
// speed (llama-server shows no movement within one batch, 2048 tokens by default), and short
// enough that a stuck client is released with a reason long before its own timeout gives up.
export const DEFAULT_HANG_LIMIT_MS = 60_000;
