/**
 * Benchmark plumbing. Every figure is printed beside a baseline measured in the
 * same run (absolute numbers drift on shared machines): HTTP figures against a
 * bare node:http server answering a fixed JSON, under the same bounded loopback
 * load from autocannon.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

export interface HttpLoad {
  name: string;
  method?: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Builds a fresh request per call (e.g. to vary ids); overrides body. */
  setupRequest?: (req: Record<string, unknown>) => Record<string, unknown>;
  /** Issue 13's targets: throughput at least this ratio of the baseline; p99 at most this many ms. */
  target?: { ratio: number; p99Ms?: number };
}

export interface LoadResult {
  rps: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export const BENCH_SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
/** Alternating rounds per comparison (compareHttp): the median of five moves only when two rounds of ten loads are off. */
export const BENCH_ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
export const BENCH_CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

/** Seconds of the same load run first and not counted, for the server and the baseline alike: steady state, not JIT warm-up. */
export const BENCH_WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);

export async function load(url: string, l: HttpLoad, connections = BENCH_CONNECTIONS): Promise<LoadResult> {
  const run = (duration: number) =>
    autocannon({
      url: url + l.path,
      method: l.method ?? 'GET',
      headers: { ...(l.body ? { 'content-type': 'application/json' } : {}), ...l.headers },
      body: l.body,
      connections,
      duration,
      ...(l.setupRequest ? { requests: [{ setupRequest: l.setupRequest as never }] } : {}),
    });
  if (BENCH_WARMUP_SECONDS > 0) await run(BENCH_WARMUP_SECONDS);
  const result = await run(BENCH_SECONDS);
  return { rps: result.requests.average, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors };
}

function waitForLine(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const m = pattern.exec(buf);
      if (m) {
        child.stdout?.off('data', onData);
        resolve(m[1] ?? m[0]);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before it was ready: ${buf}`)));
  });
}

export interface Spawned {
  url: string;
  dir: string;
  env: Record<string, string>;
  /** The tree whose src/server.ts and src/cli.ts run (this one unless spawnServer was given another). */
  cwd?: string;
  stop(): Promise<void>;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** The real server in its own process, on a fresh database. */
export async function spawnServer(extraEnv: Record<string, string> = {}, cwd = process.cwd()): Promise<Spawned> {
  const dir = mkdtempSync(join(tmpdir(), 'fusegate-bench-'));
  const env = {
    ...(process.env as Record<string, string>),
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: `file:${join(dir, 'fusegate.db')}`,
    SIGNING_KEY_FILE: join(dir, 'keys.json'),
    LOG_LEVEL: 'info',
    HOP_LIMIT_DEFAULT: '100000000',
    ...extraEnv,
  };
  const child = spawn(process.execPath, ['src/server.ts'], { env, cwd, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await waitForLine(child, /"url":"(http:\/\/[^"]+)"/);
  return { url, dir, env, cwd, stop: () => stopChild(child).then(() => removeDir(dir)) };
}

/** A bench's scratch folder, gone once its figures are taken (a run writes gigabytes: the million-entry fixtures). */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The baseline: a bare node:http server answering a fixed JSON (reading the body on POST),
 * or, given `bodyFile`, that file's bytes (the same document the server answers).
 */
export async function spawnBaseline(bodyFile?: string): Promise<Spawned> {
  const code = `
    const http = require('node:http');
    const payload = process.env.BASELINE_BODY_FILE ? require('node:fs').readFileSync(process.env.BASELINE_BODY_FILE) : JSON.stringify({ ok: true, state: 'LIVE', verdict: true });
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (body) JSON.parse(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(payload);
      });
    });
    server.listen(0, '127.0.0.1', () => console.log('{"url":"http://127.0.0.1:' + server.address().port + '"}'));
  `;
  return spawnListening(['-e', code], bodyFile ? { BASELINE_BODY_FILE: bodyFile } : {});
}

/** The durable floor of a hop (durable-floor.ts: node:http and one FULL group commit of a hop's rows), on a fresh file. */
export async function spawnDurableFloor(layout: 'rows' | 'tiles' | 'tiles-off-loop' | 'tiles-worker' | 'none'): Promise<Spawned> {
  const dir = mkdtempSync(join(tmpdir(), 'fusegate-bench-floor-'));
  const floor = await spawnListening([join(import.meta.dirname, 'durable-floor.ts'), join(dir, 'floor.db'), layout]);
  return { ...floor, stop: () => floor.stop().then(() => removeDir(dir)) };
}

/** A node process that prints {"url": ...} once it listens. */
export async function spawnListening(args: string[], env: Record<string, string> = {}): Promise<Spawned> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await waitForLine(child, /"url":"(http:\/\/[^"]+)"/);
  return { url, dir: '', env: {}, stop: () => stopChild(child) };
}

/** Runs a CLI command against a spawned server's database; returns its parsed --json output. */
export async function cliJson(env: Record<string, string>, args: string[], cwd = process.cwd()): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, ['src/cli.ts', ...args, '--json'], { env, cwd, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`cli ${args.join(' ')} failed (${code})`);
  return JSON.parse(out) as Record<string, unknown>;
}

/** A new key with a LIVE fuse on a spawned server, and the hop load that spends it (`POST /v1/fuse/hop`). */
export async function hopLoad(server: Spawned, name: string): Promise<{ key: string; fuse_id: string; load: HttpLoad }> {
  const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench'], server.cwd);
  const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)], server.cwd);
  return {
    key: String(key),
    fuse_id: String(fuse_id),
    load: {
      name,
      method: 'POST',
      path: '/v1/fuse/hop',
      headers: { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ fuse_id, action: { kind: 'pay' } }),
    },
  };
}

const rows: string[][] = [];

/** Issue 26's target for every keyed governed write but the hop and pre-finality evaluate: 0.30 of bare node:http. */
export const KEYED_WRITE_TARGET = { ratio: 0.3 };

/** A figure's target (issue 13) and whether this run met it. */
export interface Target {
  text: string;
  met: boolean;
}

/** Records one line of the final table. */
export function report(section: string, figure: string, value: string, baseline: string, ratio: string, target?: Target): void {
  const goal = target ? `${target.text} ${target.met ? 'met' : 'MISSED'}` : '';
  rows.push([section, figure, value, baseline, ratio, goal]);
  console.log(`  ${section} | ${figure}: ${value}  (baseline ${baseline}; ratio ${ratio})${goal ? `  target ${goal}` : ''}`);
}

export function printTable(): void {
  const header = ['section', 'figure', 'value', 'baseline', 'ratio', 'target'];
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  console.log(
    '\n' +
      all
        .map((r) =>
          r
            .map((c, i) => c.padEnd(widths[i]!))
            .join('  ')
            .trimEnd(),
        )
        .join('\n'),
  );
}

export const fmt = {
  rps: (n: number) => `${Math.round(n).toLocaleString('en-US')} req/s`,
  ms: (n: number) => `${n.toFixed(1)} ms`,
  /** Sub-millisecond figures (one call's latency). */
  msFine: (n: number) => `${n.toFixed(2)} ms`,
  ratio: (a: number, b: number) => (b === 0 ? 'n/a' : `${(a / b).toFixed(2)}x`),
};

/** The round of a paired comparison whose ratio is the median, and the range of all rounds' ratios. */
export interface Paired {
  base: LoadResult;
  ours: LoadResult;
  /** " (rounds 0.22-0.29)", or empty for a single round. */
  range: string;
}

/**
 * Runs two loads in BENCH_ROUNDS alternating rounds, in alternating order (the
 * baseline first in even rounds, ours first in odd ones, so that a machine
 * slowing or speeding up through a round favours neither): this machine's
 * throughput drifts by a third between minutes, so a single pair measures the
 * drift as much as the server. Returns the round whose ratio is the median,
 * with the range of all rounds.
 */
export async function pairedLoads(name: string, base: () => Promise<LoadResult>, ours: () => Promise<LoadResult>): Promise<Paired> {
  const rounds: Array<{ base: LoadResult; ours: LoadResult; ratio: number }> = [];
  for (let i = 0; i < BENCH_ROUNDS; i++) {
    let b: LoadResult, o: LoadResult;
    if (i % 2 === 0) {
      b = await base();
      o = await ours();
    } else {
      o = await ours();
      b = await base();
    }
    if (o.non2xx > 0 || o.errors > 0) console.log(`  note: ${name}: ${o.non2xx} non-2xx, ${o.errors} errors`);
    rounds.push({ base: b, ours: o, ratio: o.rps / b.rps });
  }
  rounds.sort((a, b) => a.ratio - b.ratio);
  const median = rounds[Math.floor(rounds.length / 2)]!;
  const range = rounds.length > 1 ? ` (rounds ${rounds[0]!.ratio.toFixed(2)}-${rounds.at(-1)!.ratio.toFixed(2)})` : '';
  return { base: median.base, ours: median.ours, range };
}

/** Compares one HTTP load on the server against the same load on the baseline (pairedLoads). */
export async function compareHttp(section: string, server: Spawned, baseline: Spawned, l: HttpLoad): Promise<void> {
  const { base, ours, range } = await pairedLoads(
    l.name,
    () => load(baseline.url, { ...l, headers: {} }),
    () => load(server.url, l),
  );
  const t = l.target;
  report(
    section,
    `${l.name} throughput`,
    fmt.rps(ours.rps),
    fmt.rps(base.rps),
    fmt.ratio(ours.rps, base.rps) + range,
    t && { text: `>= ${t.ratio.toFixed(2)}x`, met: ours.rps >= t.ratio * base.rps },
  );
  report(
    section,
    `${l.name} p99`,
    fmt.ms(ours.p99),
    fmt.ms(base.p99),
    fmt.ratio(ours.p99, base.p99),
    t?.p99Ms ? { text: `<= ${t.p99Ms} ms`, met: ours.p99 <= t.p99Ms } : undefined,
  );
}

/** The body of a pre-finality evaluate that answers GO: the one load every section measures that path with. */
export const EVALUATE_GO = JSON.stringify({
  rail: 'rtp',
  transfer: {
    amount: '125.00',
    currency: 'USD',
    account_number: '000123456789',
    routing_number: '021000021',
    counterparty: 'ACME Supplies LLC',
  },
});
