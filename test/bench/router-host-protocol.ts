// What the router benchmark and its host process (router-host.ts) say to each other over IPC.
// Apart from the host, because importing the host would run it.

export const HOSTED_MODEL_ID = 'demo-tiny';

export interface RouterHostReady {
  /** The daemon's engine for the model: what "direct" talks to. */
  engine: { port: number; apiKey: string };
  daemonPort: number;
  routerPort: number;
  /** The same router over the same fixed gateway, recording every request as the daemon does (the request log and the /metrics histograms). */
  recordingRouterPort: number;
  proxyPort: number;
}

/** CPU time of the host so far, microseconds (user + system). */
export interface RouterHostCpu {
  cpuMicros: number;
}
