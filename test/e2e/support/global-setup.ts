// The e2e project's global setup (vitest.config.ts): decides once per run which Chromium the
// browser files launch, says so on stderr, and hands the decision to every worker.
//
// Why here and not in each file: the files run in parallel workers, and each deciding for
// itself would print the line once per file and unpack the bundled browser several times
// at once. Vitest runs this only when an e2e file is in the run.
import type { TestProject } from 'vitest/node';
import { resolveChromium, type ChromiumLaunch } from './chromium.js';

declare module 'vitest' {
  export interface ProvidedContext {
    chromium: ChromiumLaunch;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const launch = await resolveChromium();
  process.stderr.write(`browser tests use ${launch.description}\n`);
  project.provide('chromium', launch);
}
