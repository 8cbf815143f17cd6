/**
 * Policy administration: POST /v1/pas/bind-ticket/redeem at 50 connections
 * against the bare node:http baseline (each request a HALT replay of one
 * consumed ticket: a signed receipt, a meter row and the exactly-once check,
 * durably committed), and exclusion proofs at 1,000,000 redeemed spend leaves:
 * tree build, proof time, proof size and verify time, against hashing the
 * same leaves once (the floor of any rebuild).
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { exclusionProofJson, jobKey, verifyExclusionProof } from '../src/crypto/exclusion.ts';
import { checkpointText, signNote } from '../src/crypto/note.ts';
import { SortedMerkleTree } from '../src/crypto/sorted-merkle.ts';
import { cliJson, compareHttp, fmt, report, spawnBaseline, spawnServer } from './lib.ts';

const LEAVES = Number(process.env.BENCH_PAS_LEAVES ?? 1_000_000);

async function benchRedeem(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)]);
    const auth = { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' };
    await fetch(`${server.url}/v1/pas/licenses/lic_bench/charge`, { method: 'POST', headers: auth });
    const write = { op: 'bind', policy: 'P-1', premium: '100.00' };
    const pre = await fetch(`${server.url}/v1/pas/pas-a/pre-bind`, { method: 'POST', headers: auth, body: JSON.stringify({ fuse_id, license_id: 'lic_bench', job_id: 'job_bench', write }) });
    const ticket = ((await pre.json()) as { ticket: { ticket_id: string } }).ticket.ticket_id;
    await compareHttp('pas', server, baseline, {
      name: 'POST /v1/pas/bind-ticket/redeem (HALT replay)',
      method: 'POST',
      path: '/v1/pas/bind-ticket/redeem',
      headers: auth,
      // HALT is 409 by design: count it as the answer it is.
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ ticket_id: ticket, write, now: new Date().toISOString() }) }),
    });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

function benchExclusion(): void {
  const ids = Array.from({ length: LEAVES }, (_, i) => `job_${createHash('sha256').update(String(i)).digest('hex').slice(0, 24)}`);
  const keys = ids.map(jobKey);
  let t = performance.now();
  for (const k of keys) createHash('sha256').update(k).digest();
  const hashOnce = performance.now() - t;
  t = performance.now();
  const tree = new SortedMerkleTree(keys);
  const build = performance.now() - t;
  report('pas', `exclusion tree build, ${LEAVES.toLocaleString('en-US')} leaves`, fmt.ms(build), `${fmt.ms(hashOnce)} (hash each leaf once)`, fmt.ratio(build, hashOnce));
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'));
  const origin = 'bench.example/pas-exclusion/key_bench';
  const note = signNote(checkpointText({ origin, size: tree.size, root: tree.root() }), origin, privateKey, raw);
  const head = { origin, tree_size: tree.size, root_hash: Buffer.from(tree.root()).toString('base64'), note };
  const probes = Array.from({ length: 2000 }, (_, i) => `job_absent_${i}`);
  t = performance.now();
  const proofs = probes.map((p) => exclusionProofJson(p, tree.prove(jobKey(p)), head));
  const prove = (performance.now() - t) / probes.length;
  t = performance.now();
  for (let i = 0; i < probes.length; i++) verifyExclusionProof(probes[i]!, proofs[i]!, raw);
  const check = (performance.now() - t) / probes.length;
  const bytes = proofs.reduce((n, p) => n + Buffer.byteLength(JSON.stringify(p)), 0) / proofs.length;
  const probeHash = (() => {
    const s = performance.now();
    for (let i = 0; i < 20_000; i++) createHash('sha256').update(probes[i % probes.length]!).digest();
    return (performance.now() - s) / 20_000;
  })();
  report('pas', 'exclusion proof time (absent job)', `${(prove * 1000).toFixed(1)} us`, `${(probeHash * 1000).toFixed(2)} us (one SHA-256)`, fmt.ratio(prove, probeHash));
  report('pas', 'exclusion verify time (note + 2 inclusion proofs)', `${(check * 1000).toFixed(1)} us`, `${(probeHash * 1000).toFixed(2)} us (one SHA-256)`, fmt.ratio(check, probeHash));
  report('pas', 'exclusion proof size (JSON, with signed note)', `${Math.round(bytes)} B`, `${Math.ceil(Math.log2(LEAVES))} hashes per neighbour`, 'n/a');
}

export async function benchPas(): Promise<void> {
  await benchRedeem();
  benchExclusion();
}
