/**
 * Several API nodes on one database (docs/postgresql.md, "Several nodes"): real
 * servers in this process sharing one DATABASE_URL and one signing key, as a
 * deployment behind a load balancer runs them; and the receipts log read as a
 * stranger reads it, through one node's tiles.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { loadKeyring } from '../../src/crypto/keys.ts';
import { openSignedNote, readTiledLog } from './tile-client.ts';
import { cleanEnv } from './cli.ts';
import { startTestServer, tempDir, testEnv, type TestServer } from './server.ts';

/** A private signing key as SIGNING_KEY_JWK, made as a first start makes one. */
export async function signingKeyJwk(): Promise<string> {
  const file = join(tempDir(), 'keys.json');
  await loadKeyring({ SIGNING_KEY_FILE: file });
  return JSON.stringify(JSON.parse(readFileSync(file, 'utf8')).keys[0].private_jwk);
}

/** `n` servers on database `url`, each in a folder of its own, all signing with one key. */
export async function startNodes(url: string, n: number, env: Record<string, string> = {}): Promise<TestServer[]> {
  const jwk = await signingKeyJwk();
  const nodes: TestServer[] = [];
  for (let i = 0; i < n; i++) nodes.push(await startTestServer({ DATABASE_URL: url, SIGNING_KEY_JWK: jwk, ...env }));
  return nodes;
}

async function tilesOf(node: TestServer) {
  const info = await (await node.fetch('/api/v1/logs/receipts')).json();
  const prefix = new URL(info.tiles_url).pathname;
  const get = async (p: string) => {
    const r = await node.fetch(prefix + p);
    expect(r.status, prefix + p).toBe(200);
    return new Uint8Array(await r.arrayBuffer());
  };
  return { get, vkey: info.verifier_key as string, origin: info.origin as string };
}

/** The receipts log read through `node`'s tiles and checked (signature, every tile, the root): its entries. */
export async function readReceiptsLog(node: TestServer): Promise<{ size: number; entries: Buffer[] }> {
  const { get, vkey, origin } = await tilesOf(node);
  return readTiledLog(get, vkey, origin);
}

/** The receipts log's checkpoint as `node` serves it, its signature checked: its size and root (base64). */
export async function receiptsCheckpoint(node: TestServer): Promise<{ size: number; root: string }> {
  const { get, vkey, origin } = await tilesOf(node);
  const [o, size, root] = openSignedNote(Buffer.from(await get('checkpoint')).toString('utf8'), vkey);
  expect(o).toBe(origin);
  return { size: Number(size), root: root! };
}

export interface NodeProcess {
  url: string;
  child: ChildProcess;
  /** Ends the process with `signal` (SIGTERM: a graceful stop; SIGKILL: a crash) and resolves once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** A server in a process of its own, as `npm start` runs it, with `env` (testEnv's defaults beneath): resolves once it listens. */
export function spawnNode(dir: string, env: Record<string, string>): Promise<NodeProcess> {
  const child = spawn(process.execPath, ['src/server.ts'], {
    env: { ...cleanEnv(), ...testEnv(dir), ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => void (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m) resolve({ url: m[1]!, child, stop });
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}
