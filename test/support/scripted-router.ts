// The set-up the router's integration tests share (test/integration/router*.test.ts): one HTTP
// fake engine for the whole file (test/support/router-fake-engine.ts), and routers on loopback
// over a scripted gateway (test/support/scripted-gateway.ts) whose models all point at it.
// Called once at a file's top level, it registers the hooks itself: the engine starts before
// the file's tests and stops after them, and every router a test started is closed, and its
// gateway disposed, after that test, so that no test sees another's router or timers.
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createRouter, type ListenOptions, type ListeningRouter, type RouterOptions } from '../../core/router/router.js';
import { FakeEngine } from './router-fake-engine.js';
import { ScriptedGateway, scriptedModels, type ScriptedModel } from './scripted-gateway.js';

export interface ScriptedRouterHarness {
  /** The shared fake engine: made at once, listening from the file's beforeAll on. */
  readonly engine: FakeEngine;
  /** The key the gateway hands the router for the engine, and the engine demands. */
  readonly engineKey: string;
  /** Where the fake engine listens; only once it started (in a test or a later hook). */
  readonly engineUrl: string;
  /** A router on a scripted gateway, closed after the test; `origin` is its URL without /v1. */
  start(
    overrides?: Partial<Record<string, Partial<ScriptedModel>>>,
    options?: Partial<RouterOptions>,
    listen?: ListenOptions,
  ): Promise<{ router: ListeningRouter; gateway: ScriptedGateway; origin: string }>;
}

export function scriptedRouterHarness(): ScriptedRouterHarness {
  const engineKey = 'engine-per-launch-key';
  const engine = new FakeEngine(engineKey);
  let engineUrl: string | undefined;
  const opened: { router: ListeningRouter; gateway: ScriptedGateway }[] = [];

  beforeAll(async () => {
    engineUrl = await engine.start();
  });
  afterAll(() => engine.stop());
  afterEach(async () => {
    for (const { router, gateway } of opened.splice(0)) {
      gateway.dispose();
      await router.close();
    }
  });

  const url = (): string => {
    if (engineUrl === undefined) throw new Error('the fake engine is not started yet: use engineUrl in a test or a later hook');
    return engineUrl;
  };

  return {
    engine,
    engineKey,
    get engineUrl() {
      return url();
    },
    async start(overrides = {}, options = {}, listen = {}) {
      const gateway = new ScriptedGateway(scriptedModels(overrides), url(), engineKey);
      const router = await createRouter({ gateway, ...options }).listen(listen);
      opened.push({ router, gateway });
      return { router, gateway, origin: router.url.replace(/\/v1$/, '') };
    },
  };
}
