/**
 * Start-up failures an operator must fix (a bad database or key file, a path
 * that cannot exist): the server and the CLI print one line and exit 2, like
 * configuration errors, instead of a stack trace.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

export class StartupError extends Error {
  override name = 'StartupError';
}

/** The first line of an error's message, without the driver's prefixes repeated. */
function reason(e: unknown): string {
  if (e instanceof SyntaxError) return 'not valid JSON';
  const code = (e as { code?: string })?.code;
  const msg = String((e as Error)?.message ?? e)
    .split('\n')[0]!
    .trim();
  return code && !msg.includes(code) ? `${msg} (${code})` : msg;
}

/** Runs a start-up step; any failure becomes a StartupError naming what was being opened. */
export async function startupStep<T>(what: string, step: () => T | Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    if (e instanceof StartupError) throw e;
    throw new StartupError(`${what}: ${reason(e)}`);
  }
}

/**
 * Creates `dir` and its missing parents, one level at a time. Not
 * mkdirSync(recursive), which never returns for a path under /proc/<pid>/;
 * and with an accurate message when an ancestor is a regular file.
 */
export function ensureDir(dir: string): void {
  const missing: string[] = [];
  let at = dir;
  for (;;) {
    let st;
    try {
      st = statSync(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new StartupError(`cannot use ${at}: ${reason(e)}`);
      const parent = dirname(at);
      if (parent === at) throw new StartupError(`cannot create ${dir}: no existing parent directory`);
      missing.push(at);
      at = parent;
      continue;
    }
    if (!st.isDirectory()) throw new StartupError(`cannot create ${dir}: ${at} is a file, not a directory`);
    break;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new StartupError(`cannot create directory ${d}: ${reason(e)}`);
    }
  }
}
