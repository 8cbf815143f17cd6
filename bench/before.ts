/**
 * Before and after in one run: the figures a change must not lower, measured on
 * an earlier tree and on this one side by side, under the same load, against
 * the same bare node:http baseline, in the same alternating rounds.
 *
 * BENCH_BEFORE names a checkout of the earlier commit, installed and built:
 *
 *   git worktree add /tmp/before <commit> && (cd /tmp/before && npm ci && npm run build)
 *   BENCH_BEFORE=/tmp/before BENCH_ONLY=before npm run bench
 *
 * Each round loads the three servers in turn (the order reversed every other
 * round, so a machine drifting through a round favours none), and the figure
 * kept is the round whose after/before ratio is the median. Two servers on one
 * machine share its cores only in turn: each load runs alone.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  BENCH_ROUNDS,
  cliJson,
  fmt,
  load,
  report,
  spawnBaseline,
  spawnServer,
  type HttpLoad,
  type LoadResult,
  type Spawned,
  EVALUATE_GO,
} from './lib.ts';

/** One keyed load per figure, built for a server from its own key and fuse. */
type LoadOf = (key: string, fuseId: string) => HttpLoad;

const keyed = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

const LOADS: LoadOf[] = [
  (key, fuse_id) => ({
    name: 'POST /v1/fuse/hop',
    method: 'POST',
    path: '/v1/fuse/hop',
    headers: keyed(key),
    body: JSON.stringify({ fuse_id, action: { kind: 'pay' } }),
  }),
  (key) => ({
    name: 'POST /v1/prefinality/evaluate (GO)',
    method: 'POST',
    path: '/v1/prefinality/evaluate',
    headers: keyed(key),
    body: EVALUATE_GO,
  }),
  (key, fuse_id) => ({
    name: 'POST /api/v1/execute-gate',
    method: 'POST',
    path: '/api/v1/execute-gate',
    headers: keyed(key),
    body: JSON.stringify({ fuse_id, action: { kind: 'pay' }, exposure_usd: '125.00' }),
  }),
  (key, fuse_id) => ({
    name: 'POST /v1/act (welded act)',
    method: 'POST',
    path: '/v1/act',
    headers: keyed(key),
    body: JSON.stringify({ fuse_id, action: { kind: 'pay', amount: '120.00', payee: 'acme' } }),
  }),
  (key) => {
    let n = 0;
    return {
      name: 'POST /api/v1/astl/publish',
      method: 'POST',
      path: '/api/v1/astl/publish',
      headers: keyed(key),
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ entity: `bench:${n++ % 1000}`, preset: 'agentic' }) }),
    };
  },
  (key) => ({ name: 'GET /v1/me', path: '/v1/me', headers: { authorization: `Bearer ${key}` } }),
];

async function keyAndFuse(server: Spawned): Promise<{ key: string; fuseId: string }> {
  const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench'], server.cwd);
  const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)], server.cwd);
  return { key: String(key), fuseId: String(fuse_id) };
}

interface Round {
  bare: LoadResult;
  before: LoadResult;
  after: LoadResult;
}

async function rounds(
  bare: () => Promise<LoadResult>,
  before: () => Promise<LoadResult>,
  after: () => Promise<LoadResult>,
): Promise<Round[]> {
  const out: Round[] = [];
  for (let i = 0; i < BENCH_ROUNDS; i++) {
    const r: Partial<Round> = {};
    const steps: Array<[keyof Round, () => Promise<LoadResult>]> = [
      ['bare', bare],
      ['before', before],
      ['after', after],
    ];
    if (i % 2 === 1) steps.reverse();
    for (const [name, run] of steps) r[name] = await run();
    out.push(r as Round);
  }
  return out;
}

export async function benchBefore(): Promise<void> {
  const dir = process.env.BENCH_BEFORE;
  if (!dir) {
    console.log('  skipped: set BENCH_BEFORE to a built checkout of the earlier commit (bench/before.ts says how)');
    return;
  }
  if (!existsSync(join(dir, 'src/server.ts')) || !existsSync(join(dir, 'dist/client')))
    throw new Error(`BENCH_BEFORE=${dir} is not a built checkout (src/server.ts and dist/client are needed)`);
  const baseline = await spawnBaseline();
  const before = await spawnServer({}, dir);
  const after = await spawnServer();
  try {
    const b = await keyAndFuse(before);
    const a = await keyAndFuse(after);
    for (const loadOf of LOADS) {
      const lb = loadOf(b.key, b.fuseId);
      const la = loadOf(a.key, a.fuseId);
      const all = await rounds(
        () => load(baseline.url, { ...lb, headers: {} }),
        () => load(before.url, lb),
        () => load(after.url, la),
      );
      const ratio = (r: Round) => r.after.rps / r.before.rps;
      all.sort((x, y) => ratio(x) - ratio(y));
      const median = all[Math.floor(all.length / 2)]!;
      const range = all.length > 1 ? ` (rounds ${ratio(all[0]!).toFixed(2)}-${ratio(all.at(-1)!).toFixed(2)})` : '';
      const name = la.name;
      report(
        'before',
        `${name} before`,
        fmt.rps(median.before.rps),
        fmt.rps(median.bare.rps),
        fmt.ratio(median.before.rps, median.bare.rps),
      );
      report('before', `${name} after`, fmt.rps(median.after.rps), fmt.rps(median.bare.rps), fmt.ratio(median.after.rps, median.bare.rps));
      report(
        'before',
        `${name} after / before`,
        fmt.rps(median.after.rps),
        fmt.rps(median.before.rps),
        fmt.ratio(median.after.rps, median.before.rps) + range,
        {
          text: '>= 0.95x',
          met: median.after.rps >= 0.95 * median.before.rps,
        },
      );
      report(
        'before',
        `${name} p99 after / before`,
        fmt.ms(median.after.p99),
        fmt.ms(median.before.p99),
        fmt.ratio(median.after.p99, median.before.p99),
      );
    }
  } finally {
    await Promise.all([baseline.stop(), before.stop(), after.stop()]);
  }
}
