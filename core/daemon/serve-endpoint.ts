// Start-up step: the router on its port (and on loopback too where a specific network address
// does not take loopback connections), with the access rules read per request.
import { networkInterfaces } from 'node:os';
import type { AdminService } from '../admin/index.js';
import { createAdminHandler, RequestHistograms } from '../admin/index.js';
import type { Catalog } from '../catalog/catalog.js';
import type { LlmtrayConfig } from '../catalog/config/load-config.js';
import type { Controller } from '../controller/controller.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import { createRouter, type RouterAccess } from '../router/router.js';
import type { ModelActivity } from '../demand/activity.js';
import { createGateway } from '../demand/gateway.js';
import { localOrigin, networkEndpoints, type ListenPlan } from './listen-plan.js';
import { modelCards } from '../demand/model-cards.js';
import { cachedGgufCardReader } from '../catalog/gguf-card.js';
import { portTakenMessage, type AdviceFace } from './startup-advice.js';
import type { ModelTurns } from '../demand/turns.js';
import type { RequestLog } from '../demand/request-log.js';
import type { RequestRecorder } from '../router/http/request-trace.js';
import type { OllamaPulls } from '../router/ollama/pulls.js';

export interface ServedEndpoint {
  port: number;
  /** http://HOST:PORT as local apps reach it. */
  origin: string;
  /** Other machines' base URLs for these allowed host names; empty on loopback. */
  networkEndpointsFor(allowedHosts: readonly string[]): string[];
  /**
   * listen.ollamaPort: where apps with Ollama's address built in reach the endpoint too —
   * `listening` on that loopback port, or `taken` (another program has it: Ollama itself, most
   * likely); null when none is configured.
   */
  ollamaPort: { port: number; listening: boolean } | null;
  /** Closes the listeners, then the router. */
  close(): Promise<void>;
}

export async function serveEndpoint(deps: {
  plan: ListenPlan;
  port: number;
  catalog: Catalog;
  controller: Controller;
  supervisor: Supervisor;
  activity: ModelActivity;
  turns: ModelTurns;
  /** Where each model request's record goes (the Activity view); /metrics' request histograms count them too. */
  requests: RequestLog;
  admin: AdminService;
  /** The pulls from the Hugging Face Hub, for Ollama's `/api/pull` and `/api/delete`: the same ones the admin API shows. */
  pulls: OllamaPulls;
  token: string;
  staticDir: string;
  startedAt: number;
  face: AdviceFace;
  configPath: string;
}): Promise<ServedEndpoint> {
  const { catalog, admin, plan } = deps;
  const access: { listen: LlmtrayConfig['listen'] | null; rules: RouterAccess | null } = { listen: null, rules: null };
  const histograms = new RequestHistograms((id) => catalog.resolve(id)?.id === id);
  const recorder: RequestRecorder = {
    record: (record) => {
      // activity.keep read per record, so a reload applies without a subscription (resize is a no-op for the same size).
      deps.requests.resize(catalog.config().activity.keep);
      deps.requests.add(record);
      histograms.observe(record);
    },
    keepBodiesBytes: () => catalog.config().activity.keepBodiesBytes,
  };
  const router = createRouter({
    requests: recorder,
    gateway: {
      ...createGateway({ catalog, controller: deps.controller, supervisor: deps.supervisor, activity: deps.activity, startedAt: deps.startedAt, turns: deps.turns }),
      // Ollama's model routes: the GGUF's keys, what is resident, an app's keep_alive.
      ...modelCards({ catalog, readCard: cachedGgufCardReader(), snapshot: () => admin.snapshot(), activity: deps.activity, trigger: () => deps.controller.trigger() }),
    },
    activationWaitMs: catalog.config().activationWaitMs,
    fallthrough: createAdminHandler({ service: admin, token: deps.token, staticDir: deps.staticDir, requestMetrics: histograms }),
    // llama.cpp router mode's /models/load and /models/unload: the tray's own commands, as the admin API runs them.
    modelCommands: {
      load: (id) => admin.runCommand({ id, command: 'load' }),
      unload: (id) => admin.runCommand({ id, command: 'unload' }),
    },
    pulls: deps.pulls,
    // Read per request: a key removed from the config stops working at the next request.
    // Rebuilt only when the config's `listen` changes (a reload), not for every request.
    access: () => {
      const listen = catalog.config().listen;
      if (access.listen !== listen) {
        access.listen = listen;
        access.rules = { clientKeys: listen.clientKeys, keysRequired: plan.network, allowedHosts: listen.allowedHosts, corsOrigins: listen.corsOrigins, fallthroughFromNetwork: listen.admin === 'network' };
      }
      return access.rules as RouterAccess;
    },
  });
  const closers: (() => Promise<void> | void)[] = [() => router.close()];
  const close = async (): Promise<void> => {
    for (const closer of closers.splice(0).reverse()) await closer();
  };
  const listenOn = async (host: string, port: number): Promise<number> => {
    const listening = await router.listen({ host, port }).catch((error: unknown) => {
      throw (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? new Error(portTakenMessage(deps.face, { port, host, configPath: deps.configPath })) : error;
    });
    closers.push(() => listening.close());
    return listening.port;
  };
  /**
   * The same router on Ollama's port, loopback only (the apps it is for run here; the LAN has
   * the main port). A port another program holds is no reason not to start: the apps can still
   * be pointed at the main one, and the daemon says so.
   */
  const listenForOllama = async (ollamaPort: number | undefined, mainPort: number): Promise<ServedEndpoint['ollamaPort']> => {
    if (ollamaPort === undefined || ollamaPort === mainPort) return ollamaPort === undefined ? null : { port: ollamaPort, listening: true };
    try {
      const listening = await router.listen({ host: '127.0.0.1', port: ollamaPort });
      closers.push(() => listening.close());
      return { port: ollamaPort, listening: true };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      return { port: ollamaPort, listening: false };
    }
  };
  try {
    const port = await listenOn(plan.host, deps.port);
    // A specific network address does not take loopback connections: the CLI, the dashboard
    // and local apps get 127.0.0.1 on the same port.
    if (plan.loopbackToo) await listenOn('127.0.0.1', port);
    const ollamaPort = await listenForOllama(catalog.config().listen.ollamaPort, port);
    const interfaces = Object.values(networkInterfaces()).flat().filter((a) => a !== undefined);
    return { port, origin: localOrigin(plan, port), networkEndpointsFor: (allowedHosts) => networkEndpoints(plan, port, allowedHosts, interfaces), ollamaPort, close };
  } catch (error) {
    await close();
    throw error;
  }
}
