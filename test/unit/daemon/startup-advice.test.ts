// A start-up refusal names what its reader can do: flags in the CLI's terminal, never in the desktop app's error box.
import { describe, expect, it } from 'vitest';
import { badConfigAtStartMessage, dataDirTakenMessage, portTakenMessage } from '../../../core/daemon/startup-advice.js';

const CLI_FLAG = /--[a-z]/;

describe('start-up advice', () => {
  const port = { port: 11435, host: '127.0.0.1', configPath: '/home/p/.local/share/llmtray/demo/config.yaml' };
  const holder = { pid: 4242, lockPath: '/home/p/.local/share/llmtray/daemon.lock' };

  it('tells the CLI which flag to pass', () => {
    expect(portTakenMessage('cli', port)).toBe(
      'port 11435 on 127.0.0.1 is already in use (another llmtray, or another program); pass --port N, or set listen.port in /home/p/.local/share/llmtray/demo/config.yaml',
    );
    expect(dataDirTakenMessage('cli', holder)).toContain('pass another --data-dir');
  });

  it('tells the desktop app\'s user the config field and file, or to quit the other llmtray, and no flag', () => {
    const portTaken = portTakenMessage('desktop', port);
    expect(portTaken).toContain('set another listen.port in /home/p/.local/share/llmtray/demo/config.yaml (llmtray keeps that file)');
    expect(portTaken).not.toMatch(CLI_FLAG);
    const dataDirTaken = dataDirTakenMessage('desktop', holder);
    expect(dataDirTaken).toContain('another llmtray (pid 4242) is already running');
    expect(dataDirTaken).toContain('Quit the other llmtray');
    expect(dataDirTaken).not.toMatch(CLI_FLAG);
  });

  it('a config no check passed at start: every error on its own line, and the way out (deleting it, only for the demo, which writes it)', () => {
    const configPath = '/home/p/.config/llmtray/config.yaml';
    const errors = [`${configPath}: models[0].cxt: unknown field, set to 4096; did you mean "ctx"? Expected one of: id, path, ctx`, `${configPath}:9:5: YAML syntax error: Missing closing "quote`];
    expect(badConfigAtStartMessage('cli', { configPath, errors, demo: false })).toBe(
      [
        `the config file ${configPath} has 2 errors, so llmtray does not start:`,
        `  ${errors[0]}`,
        `  ${errors[1]}`,
        'Fix the file, then start llmtray again. (Once it runs, an edit with an error is reported and the last good config keeps running.)',
      ].join('\n'),
    );
    const desktop = badConfigAtStartMessage('desktop', { configPath, errors: errors.slice(0, 1), demo: true });
    expect(desktop).toContain(`the config file ${configPath} has an error, so llmtray does not start:\n  ${errors[0]}\n`);
    expect(desktop).toContain('Fix the file (llmtray keeps it), or delete it and the demo writes a fresh one, then start llmtray again.');
    expect(desktop).not.toMatch(CLI_FLAG);
  });
});
