/**
 * Runs the CLI (`node src/cli.ts …`) in a child process without blocking this one.
 * Tests run the server in-process: a spawnSync here would freeze its event loop,
 * so a pooled keep-alive connection outlives the server's idle timeout while
 * nothing runs, and the next fetch reuses the socket just as the server closes
 * it (ECONNRESET). With the loop running, idle sockets are retired on time.
 */
import { spawn } from 'node:child_process';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The timeout of a test that starts Node processes (the CLI, a server): each
 * loads the sources anew and takes seconds on a busy machine, while the
 * suite's 30 s is meant for in-process work. It bounds work, not a race.
 */
export const PROCESS_TEST_TIMEOUT_MS = 120_000;

/** The parent's environment without what vitest itself sets (it exports BASE_URL=/ for Vite). */
export function cleanEnv(): Record<string, string> {
  const { BASE_URL: _b, SITE_URL: _s, ...rest } = process.env;
  return rest as Record<string, string>;
}

/** Runs any command asynchronously and collects its output. */
export function run(command: string, args: string[], env: Record<string, string> = cleanEnv(), cwd?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `node src/cli.ts …args` with `env` over the cleaned parent environment. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return run(process.execPath, ['src/cli.ts', ...args], { ...cleanEnv(), ...env });
}
