// The V8 flags the daemon's Node process runs with. Every way llmtray starts it passes them: the
// `llmtray` bin's shebang (core/cli.ts), `npm start` run headless (electron/launch-mode.ts), the
// Electron app (`--js-flags`, electron/launch.ts), and the tests and the soak
// (test/support/daemon-process.ts), so what the soak measures is what users run.
//
// Why a small young generation: V8 grows its semi-spaces with the allocation rate, up to 16 MB
// each, and a busy router allocates fast. Under the soak's traffic the daemon's RSS at rest rose
// 18.5 MB in 17 minutes while its live heap after a full GC grew under 1 MB: the young
// generation had doubled from 16 to 32 MB, and V8 does not give it back at rest. Capped at 4 MB
// per semi-space (8 MB of young generation), the same traffic moved RSS by 2.3 MB, and a
// scavenge every 4 MB allocated costs a request-serving heap, whose young objects mostly die
// with their request, next to nothing.
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
