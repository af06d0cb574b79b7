// The traffic: N local apps, each sending chat requests back to back through the official
// openai client, streamed and not, to models chosen at random from a mix whose chat models do
// not fit together — so the requests themselves drive the swaps.
//
// Seeded, so a run's sequence of requests is the same every time; paused (not stopped) for the
// moments the soak samples the daemon at rest.
import type OpenAI from 'openai';
import { seededRandom } from '../../core/catalog/demo/seeded-random.js';
import { sendChat, type RequestResult } from './request-outcome.js';

export interface TrafficOptions {
  client: OpenAI;
  clients: number;
  /** The models to choose from; each request picks one at random. */
  models: readonly string[];
  /** Records each request's result as it ends. */
  record(origin: string, result: RequestResult): void;
}

/**
 * After a request got no answer at all (the daemon is down: it is being killed and restarted),
 * wait this long before the next, as an app would, instead of spinning on refused connections.
 */
const BACKOFF_AFTER_NO_ANSWER_MS = 250;

export class Traffic {
  private running = false;
  private paused: { resume: Promise<void>; release: () => void } | null = null;
  private readonly inFlight = new Set<Promise<unknown>>();
  private loops: Promise<void>[] = [];

  constructor(private readonly options: TrafficOptions) {}

  /** Starts every client. Idempotent. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loops = Array.from({ length: this.options.clients }, (_, i) => this.loop(i));
  }

  /** Stops sending new requests and resolves when every request in flight has ended. */
  async pause(): Promise<void> {
    if (this.paused === null) {
      let release = () => {};
      const resume = new Promise<void>((done) => (release = done));
      this.paused = { resume, release };
    }
    await Promise.allSettled([...this.inFlight]);
  }

  resume(): void {
    this.paused?.release();
    this.paused = null;
  }

  /** Ends every client after its request in flight; resolves when all have ended. */
  async stop(): Promise<void> {
    this.running = false;
    this.resume();
    await Promise.all(this.loops);
  }

  private async loop(index: number): Promise<void> {
    const random = seededRandom(0x50a4 + index);
    const origin = `client ${index + 1}`;
    for (let n = 0; this.running; n++) {
      if (this.paused !== null) {
        await this.paused.resume;
        continue;
      }
      const model = this.options.models[Math.floor(random.next() * this.options.models.length)] as string;
      const request = sendChat(this.options.client, {
        model,
        stream: random.next() < 0.5,
        maxTokens: 4 + Math.floor(random.next() * 20),
        prompt: `${origin}, request ${n}: say something.`,
      });
      this.inFlight.add(request);
      const result = await request;
      this.inFlight.delete(request);
      this.options.record(origin, result);
      if (result.error?.class === 'connection') await new Promise((done) => setTimeout(done, BACKOFF_AFTER_NO_ANSWER_MS));
    }
  }
}
