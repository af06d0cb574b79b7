// The demo's config is the person's once written: a restart and a new budget limit keep their edits.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareDemo, writeDemoLimit } from '../../../core/daemon/demo.js';

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-demo-config-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('the demo config', () => {
  it('is written when absent, then kept with the edits across a restart; the demo sets only budget.limit', async () => {
    const first = await prepareDemo(dataDir);
    const written = await readFile(first.configPath, 'utf8');
    expect(parse(written).models.map((m: { id: string }) => m.id)).toEqual(['demo-chat', 'demo-draft', 'demo-tiny', 'demo-broken', 'demo-embed']);

    // What a person does when port 11435 is taken: sets another one, with a note to self.
    const edited = `${written}# moved off 11435, which another program uses\nlisten:\n  port: 18123\n`;
    await writeFile(first.configPath, edited);

    const again = await prepareDemo(dataDir);
    expect(await readFile(again.configPath, 'utf8')).toBe(edited);

    await writeDemoLimit(again, 260 * 2 ** 20);
    const text = await readFile(again.configPath, 'utf8');
    const config = parse(text);
    expect(config.listen).toEqual({ port: 18123 });
    // A size a person reads, as they would write it.
    expect(config.budget).toEqual({ reserve: 0, limit: '260MiB' });
    expect(text).toContain('# moved off 11435, which another program uses');
    expect(config.models.map((m: { id: string }) => m.id)).toEqual(['demo-chat', 'demo-draft', 'demo-tiny', 'demo-broken', 'demo-embed']);
  });
});
