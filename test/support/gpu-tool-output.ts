// Captured driver-tool output for parser tests. Each fixture's first line says where the
// capture came from; the rest is what the tool printed, which is what a parser gets.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const GPU_TOOL_FIXTURES = resolve(import.meta.dirname, '../fixtures/gpu-tools');

/** The tool's output in `test/fixtures/gpu-tools/<name>`, without the source line. */
export function toolOutput(name: string): string {
  const text = readFileSync(resolve(GPU_TOOL_FIXTURES, name), 'utf8');
  return text.slice(text.indexOf('\n') + 1);
}
