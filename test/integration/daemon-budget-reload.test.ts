// A budget limit or reserve edited in the config applies to the running daemon: the config is
// reloaded when it changes (README), but the live budget had read both once at start, so a new
// limit showed nowhere and held nothing until a restart. The real daemon process, its real
// config watcher, on the CPU (host RAM is the budget there).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { demoConfigText } from '../../core/daemon/demo-config.js';
import { eventually, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const MiB = 1024 * 1024;
let daemon: DaemonProcess;
let workDir: string;
let models: DemoModels;
let configPath: string;

const config = (limitBytes?: number): string =>
  demoConfigText(models, { warmSpare: false, reserveBytes: 0, fallbackAndAliases: false, broken: false, embed: false, ...(limitBytes === undefined ? {} : { limitBytes }) });

beforeAll(async () => {
  workDir = await makeDataDir();
  models = await generateDemoModels(workDir);
  configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, config());
  daemon = await startDaemonProcess({ config: configPath });
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await removeDataDir(workDir);
});

describe('a budget edited in the config', () => {
  it('applies without a restart: the budget becomes the new limit, and lifting the limit gives back the machine', async () => {
    const unlimited = (await daemon.state()).budget;
    expect(unlimited.mode).toBe('cpu');
    expect(unlimited.limitBytes).toBeNull();
    expect(unlimited.budgetBytes).toBeGreaterThan(300 * MiB);

    await writeFile(configPath, config(300 * MiB));
    const limited = await eventually('the 300 MiB limit is the budget', async () => {
      const { budget } = await daemon.state();
      return budget.limitBytes === 300 * MiB && budget.budgetBytes === 300 * MiB ? budget : undefined;
    }, 20_000, 200);
    expect(limited.budgetBytes).toBe(300 * MiB);

    await writeFile(configPath, config());
    await eventually('the limit is lifted', async () => {
      const { budget } = await daemon.state();
      return budget.limitBytes === null && budget.budgetBytes > 300 * MiB ? budget : undefined;
    }, 20_000, 200);
  }, 60_000);
});
