// Ollama's model management through a real daemon, with the `ollama` npm client, against the Hub
// stand-in (test/support/hub-standin/) that HF_ENDPOINT points the daemon at: an app pulls an
// hf.co/ model with streamed progress to `success`, chats with it under that name, deletes it
// (gone from /api/tags); a name from Ollama's own library is refused saying what to pull; a
// model llmtray did not pull is not deleted; copy is refused naming why.
import { join } from 'node:path';
import { Ollama } from 'ollama';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonProcess } from '../support/daemon-process.js';
import type { PullView } from '../../core/contracts/hub/pulls.js';
import { TINY_REPO } from '../support/hub-standin/demo-repos.js';
import { ollamaShapeErrors } from '../support/ollama-shapes.js';
import type { HubStandIn } from '../support/hub-standin/hub-standin.js';
import { makePullWorld, untilOnDisk, type PullWorld } from '../support/pull-world.js';

let world: PullWorld;
let hub: HubStandIn;
let daemon: DaemonProcess;
let ollama: Ollama;
const PULLED = `hf.co/${TINY_REPO}:Q4_K_M`;

beforeAll(async () => {
  world = await makePullWorld('llmtray-ollama-pull-');
  hub = world.hub;
  daemon = await world.startDaemon();
  ollama = new Ollama({ host: daemon.origin });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  await world?.close();
});

describe("Ollama's /api/pull, /api/delete and /api/copy", () => {
  it('pulls an hf.co/ name with streamed progress to success, chats with it under that name, and deletes it', async () => {
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    // The cache starts empty: nothing is listed before the pull.
    expect((await ollama.list()).models).toEqual([]);
    const statuses: { status: string; digest?: string; total?: number; completed?: number }[] = [];
    for await (const part of await ollama.pull({ model: PULLED, stream: true })) statuses.push(part);
    const names = statuses.map((part) => part.status);
    expect(names[0]).toBe('pulling manifest');
    expect(names.slice(-3)).toEqual(['verifying sha256 digest', 'writing manifest', 'success']);
    const files = statuses.filter((part) => part.digest !== undefined);
    expect(files.length).toBeGreaterThan(0);
    for (const part of files) expect(part).toMatchObject({ status: `pulling ${sha.slice(0, 12)}`, digest: `sha256:${sha}` });
    expect(files.at(-1)!.completed).toBe(files.at(-1)!.total);
    // Each line has the keys and types of docs/api.md's example (test/fixtures/ollama-api).
    expect(ollamaShapeErrors('pullManifest', statuses[0])).toEqual([]);
    expect(files.flatMap((part) => ollamaShapeErrors('pullProgress', part))).toEqual([]);
    expect(ollamaShapeErrors('pullSuccess', statuses.at(-1))).toEqual([]);

    // Listed under the name it was pulled by, as Ollama lists a pulled model, and show and chat take it.
    expect((await ollama.list()).models.map((m) => m.name)).toEqual([PULLED]);
    expect((await ollama.show({ model: PULLED })).details.format).toBe('gguf');
    const reply = await ollama.chat({ model: PULLED, messages: [{ role: 'user', content: 'Hello' }], options: { num_predict: 4 } });
    expect(reply.done).toBe(true);
    expect(reply.eval_count).toBeGreaterThan(0);
    expect((await ollama.ps()).models.map((m) => m.name)).toEqual([PULLED]);

    // Pulling what is already here fetches nothing again and answers success at once (stream: false).
    const gets = hub.requests.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`).length;
    expect(await ollama.pull({ model: PULLED, stream: false })).toEqual({ status: 'success' });
    expect(hub.requests.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`).length).toBe(gets);

    await ollama.delete({ model: PULLED });
    expect((await ollama.list()).models).toEqual([]);
    await expect(ollama.chat({ model: PULLED, messages: [{ role: 'user', content: 'Hello' }], options: { num_predict: 4 } })).rejects.toThrow(/not found/);
  }, 120_000);

  it('stops the pull when the app that started it goes away, as Ollama does, keeping the bytes for the next pull', async () => {
    const sha = hub.sha256Of(TINY_REPO, 'Tiny-Q4_K_M.gguf');
    const held = hub.holdNextDownloadAfter(100_000);
    const stream = await ollama.pull({ model: PULLED, stream: true });
    const first = await stream[Symbol.asyncIterator]().next();
    expect(first.value).toEqual({ status: 'pulling manifest' });
    await held.reached;
    // The bytes sent are on disk before the app goes: the resume then has them to ask past.
    await untilOnDisk(join(world.repoDir(TINY_REPO), 'blobs', `${sha}.incomplete`), 100_000);
    stream.abort();
    const pulls = async (): Promise<PullView[]> => (await (await daemon.api('/api/downloads')).json()) as PullView[];
    const ofThis = async () => (await pulls()).find((pull) => pull.id === PULLED);
    while ((await ofThis())?.state !== 'cancelled') await new Promise((r) => setTimeout(r, 20));
    held.release();
    // Pulling again resumes from the bytes kept (a Range request) and finishes it.
    expect(await ollama.pull({ model: PULLED, stream: false })).toEqual({ status: 'success' });
    expect(hub.requests.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`).at(-1)?.range).toMatch(/^bytes=[1-9]\d*-$/);
    await ollama.delete({ model: PULLED });
  }, 120_000);

  it("refuses a name from Ollama's library with 400, saying to pull an hf.co/ name", async () => {
    await expect(ollama.pull({ model: 'llama3.2' })).rejects.toMatchObject({ status_code: 400, error: expect.stringMatching(/Ollama's library.*hf\.co\/OWNER\/REPO:QUANT/) });
    await expect(ollama.pull({ model: 'library/llama3.2:1b', stream: true })).rejects.toMatchObject({ status_code: 400 });
  });

  it('ends the stream with an error line when the Hub refuses the name (no such repo), as Ollama does', async () => {
    const stream = await ollama.pull({ model: 'hf.co/llmtray-test/No-Such-GGUF:Q4_K_M', stream: true });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const part of stream) seen.push(part.status);
      })(),
    ).rejects.toThrow(/No-Such-GGUF/);
    expect(seen).toEqual(['pulling manifest']);
  });

  it('refuses to delete a model llmtray did not pull with 404, and copy with 501 naming config.yaml', async () => {
    await expect(ollama.delete({ model: 'hf.co/someone/Else-GGUF:Q4_K_M' })).rejects.toMatchObject({ status_code: 404, error: expect.stringMatching(/deletes only models it pulled/) });
    await expect(ollama.copy({ source: PULLED, destination: 'mine' })).rejects.toMatchObject({ status_code: 501, error: expect.stringMatching(/aliases:/) });
  });
});
