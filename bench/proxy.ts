/**
 * The MCP gating proxy (issue 48): what `fusegate proxy` adds to one tool call.
 * The same upstream (@modelcontextprotocol/server-everything over stdio) is
 * called through the official SDK client directly, and through the proxy,
 * which hops first on a local gate (the real server in its own process,
 * durable as shipped) and then forwards. Calls are made one at a time, in
 * BENCH_ROUNDS alternating rounds of BENCH_SECONDS per side; the figures are
 * the median and p99 of each side's latencies over all rounds, and the
 * difference is what the proxy added. Beside them, the same hop made alone by
 * the typed client, one at a time: the part of the added time that is the
 * gate's, the rest being the proxy's own.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { FuseGateClient } from '../src/client.ts';
import { BENCH_ROUNDS, BENCH_SECONDS, cliJson, fmt, removeDir, report, spawnServer } from './lib.ts';

const EVERYTHING = join(process.cwd(), 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const CALL = { name: 'echo', arguments: { message: 'bench' } };
/** The target: at most this many ms added to a call's median, with the gate local. */
const TARGET_ADDED_MEDIAN_MS = 2;

async function connect(command: string, args: string[], env?: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore', ...(env ? { env } : {}) }));
  return client;
}

/** Latencies (ms) of sequential runs of `once` for `seconds`. */
async function timeFor(seconds: number, into: number[], once: () => Promise<void>): Promise<void> {
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    await once();
    into.push(performance.now() - t0);
  }
}

const callOf = (client: Client) => async () => {
  const r = await client.callTool(CALL);
  if (r.isError) throw new Error(`the call was refused: ${JSON.stringify(r.content)}`);
};

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;

export async function benchProxy(): Promise<void> {
  const server = await spawnServer();
  const dir = mkdtempSync(join(tmpdir(), 'fusegate-bench-proxy-'));
  const clients: Client[] = [];
  try {
    const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)]);
    // A mapped tool: every call is one hop, none a classify.
    writeFileSync(join(dir, 'kinds.json'), JSON.stringify({ echo: 'send_email' }));
    const direct = await connect(process.execPath, [EVERYTHING, 'stdio']);
    clients.push(direct);
    const proxied = await connect(
      process.execPath,
      ['src/cli.ts', 'proxy', '--fuse', String(fuse_id), '--kinds', join(dir, 'kinds.json'), '--', process.execPath, EVERYTHING, 'stdio'],
      {
        ...(process.env as Record<string, string>),
        FUSEGATE_URL: server.url,
        FUSEGATE_KEY: String(key),
      },
    );
    clients.push(proxied);
    const gate = new FuseGateClient({ baseUrl: server.url, apiKey: String(key) });
    const sides = {
      direct: { run: callOf(direct), ms: [] as number[] },
      proxied: { run: callOf(proxied), ms: [] as number[] },
      hop: {
        run: async () => void (await gate.hop({ fuse_id: String(fuse_id), action: { kind: 'send_email' }, tool: 'echo' })),
        ms: [] as number[],
      },
    };
    // Warm every path (JIT, connections), uncounted.
    for (const side of Object.values(sides)) await timeFor(1, [], side.run);
    for (let i = 0; i < BENCH_ROUNDS; i++) {
      // Alternating order, so that a machine slowing down through a round favours no side.
      const order = i % 2 === 0 ? [sides.direct, sides.proxied, sides.hop] : [sides.hop, sides.proxied, sides.direct];
      for (const side of order) await timeFor(BENCH_SECONDS, side.ms, side.run);
    }
    const [d, p, h] = [sides.direct.ms, sides.proxied.ms, sides.hop.ms].map((ms) => ms.sort((a, b) => a - b)) as [
      number[],
      number[],
      number[],
    ];
    const [dMed, pMed, hMed, dP99, pP99, hP99] = [
      percentile(d, 0.5),
      percentile(p, 0.5),
      percentile(h, 0.5),
      percentile(d, 0.99),
      percentile(p, 0.99),
      percentile(h, 0.99),
    ];
    const calls = `${p.length.toLocaleString('en-US')} proxied, ${d.length.toLocaleString('en-US')} direct calls`;
    report(
      'proxy',
      `tools/call through fusegate proxy, median (${calls})`,
      fmt.msFine(pMed),
      `direct ${fmt.msFine(dMed)}`,
      fmt.ratio(pMed, dMed),
    );
    report('proxy', 'tools/call through fusegate proxy, p99', fmt.msFine(pP99), `direct ${fmt.msFine(dP99)}`, fmt.ratio(pP99, dP99));
    report('proxy', 'added per call (the hop on a local gate), median', fmt.msFine(pMed - dMed), 'direct call', '', {
      text: `<= ${TARGET_ADDED_MEDIAN_MS} ms`,
      met: pMed - dMed <= TARGET_ADDED_MEDIAN_MS,
    });
    report('proxy', 'added per call, p99', fmt.msFine(pP99 - dP99), 'direct call', '');
    // The share of the added time that is the gate's: the same hop, made alone by the typed client.
    report(
      'proxy',
      `the hop alone, one at a time (${h.length.toLocaleString('en-US')} hops), median`,
      fmt.msFine(hMed),
      `added ${fmt.msFine(pMed - dMed)}`,
      fmt.ratio(hMed, pMed - dMed),
    );
    report('proxy', 'the hop alone, p99', fmt.msFine(hP99), `added ${fmt.msFine(pP99 - dP99)}`, fmt.ratio(hP99, pP99 - dP99));
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    removeDir(dir);
    await server.stop();
  }
}
