/**
 * Every command on the Get started page, run as written against a real
 * server: the page's code blocks are read from the served HTML and must be
 * exactly the list in src/site/get-started.ts, which this test then runs in
 * order (bash for shell steps, Node for the TypeScript file), carrying the
 * variables each step tells the reader to keep.
 */
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET_STARTED } from '../src/site/get-started.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const run = promisify(execFile);
let srv: TestServer;

beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await srv?.stop();
});

const decode = (html: string) =>
  html
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#x27;/g, "'")
    .replace(/&#(\d+);/g, (_m, n) => String.fromCharCode(Number(n)))
    .replace(/&amp;/g, '&');

function pick(json: unknown, path: string): string {
  const v = path.split('.').reduce((o: any, k) => o?.[k], json);
  if (typeof v !== 'string') throw new Error(`no ${path} in the answer`);
  return v;
}

describe('Get started', () => {
  it('shows exactly the commands the test runs', async () => {
    const html = await (await srv.fetch('/start')).text();
    const blocks = [...html.matchAll(/<pre[^>]*data-step="([a-z-]+)"[^>]*><code[^>]*>([\s\S]*?)<\/code><\/pre>/g)].map((m) => ({
      id: m[1],
      command: decode(m[2]!),
    }));
    expect(blocks).toEqual(GET_STARTED.map((s) => ({ id: s.id, command: s.command })));
    expect(html).toContain('href="/dashboard"');
    // The landing page links to it first.
    const landing = await (await srv.fetch('/')).text();
    const main = landing.slice(landing.indexOf('<main'));
    expect(main.match(/<a [^>]*href="([^"]+)"/)?.[1]).toBe('/start');
  });

  it('every command works, in order, against a real server', { timeout: 120_000 }, async () => {
    // Only what a reader's shell would have (the test runner's own variables, e.g. Vite's BASE_URL, stay out).
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      BASE: srv.url,
      DATABASE_URL: srv.config.DATABASE_URL,
      SIGNING_KEY_FILE: srv.config.SIGNING_KEY_FILE,
      LOG_LEVEL: 'silent',
    };
    for (const step of GET_STARTED) {
      let stdout: string;
      if (step.lang === 'bash') {
        ({ stdout } = await run('bash', ['-euo', 'pipefail', '-c', step.command], { env, cwd: process.cwd() }));
      } else {
        // Saved at the root of the repository, as the page says.
        const file = join(process.cwd(), `.get-started-${process.pid}-${step.file}`);
        writeFileSync(file, step.command);
        try {
          ({ stdout } = await run(process.execPath, [file], { env, cwd: process.cwd() }));
        } finally {
          rmSync(file, { force: true });
        }
      }
      expect(stdout, `${step.id}: ${stdout.slice(0, 400)}`).toContain(step.expect);
      // npm prints its own "> fusegate cli" header first: the answer is the JSON line.
      const answer = stdout.split('\n').find((l) => l.startsWith('{')) ?? '';
      for (const [name, path] of Object.entries(step.sets ?? {})) env[name] = pick(JSON.parse(answer), path);
    }
    // The hop of the page is in the public log under the key the CLI created.
    const ev = await (await srv.fetch(`/v1/receipts/${env.RECEIPT}`, { headers: { accept: 'application/json' } })).json();
    expect(ev.payload).toMatchObject({ kind: 'hop', decision: 'PERMIT', subject: env.FUSE });
  });
});
