/**
 * Witnesses (issue 27): POST /v1/fuse/hop on a server with two C2SP witnesses
 * configured (quorum: both) against the same hop on a server with none, at the
 * same load; the target is within 5% (witnessing is a background job, never in
 * an act's way). The witnesses are the test suite's C2SP test witness
 * (test/support/test-witness.ts) on real ports in this process.
 *
 * Then, on the witnessed server after the load: how long a new checkpoint takes
 * to carry the quorum's cosignatures, and a receipt's size in bytes (the
 * document at its verify_url, its base64url form as sent in Gate-Receipt, and
 * the COSE transparent statement) against the hop answer that links to it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestWitness } from '../test/support/test-witness.ts';
import { fmt, hopLoad, load, pairedLoads, report, spawnServer, type HttpLoad, type Spawned } from './lib.ts';

export async function benchWitness(): Promise<void> {
  const witnesses = await Promise.all(['w1.bench.example', 'w2.bench.example'].map((n) => startTestWitness(n, {})));
  const plain = await spawnServer();
  const policyDir = plain.dir;
  const policy = join(policyDir, 'witnesses.policy');
  writeFileSync(
    policy,
    `${witnesses.map((w, i) => `witness w${i + 1} ${w.vkey} ${w.url}`).join('\n')}\ngroup both all w1 w2\nquorum both\n`,
  );
  const witnessed = await spawnServer({ WITNESS_POLICY: policy });
  try {
    const logs = (await (await fetch(`${witnessed.url}/api/v1/logs`)).json()) as { logs: Array<{ origin: string; verifier_key: string }> };
    for (const l of logs.logs) for (const w of witnesses) w.trust(l.origin, l.verifier_key);
    const none = await hopLoad(plain, 'POST /v1/fuse/hop, no witness');
    const two = await hopLoad(witnessed, 'POST /v1/fuse/hop, two witnesses (baseline: no witness)');
    await compareHops(witnessed, plain, two.load, none.load);

    // After the load: one more hop, and the time until its checkpoint carries both cosignatures.
    const started = performance.now();
    const hop = (await (
      await fetch(`${witnessed.url}/v1/fuse/hop`, { method: 'POST', headers: two.load.headers, body: two.load.body })
    ).json()) as Record<string, unknown>;
    const hopBytes = Buffer.byteLength(JSON.stringify(hop));
    let doc = '';
    for (;;) {
      doc = await (await fetch(String(hop.verify_url), { headers: { accept: 'application/json' } })).text();
      if ((JSON.parse(doc) as { witnesses?: { quorum_holds: boolean } }).witnesses?.quorum_holds) break;
      if (performance.now() - started > 30_000) throw new Error('no quorum within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const quorumMs = performance.now() - started;
    report('witness', 'hop to a checkpoint cosigned by the quorum', fmt.ms(quorumMs), '5000.0 ms', fmt.ratio(quorumMs, 5000), {
      text: '<= 5000 ms',
      met: quorumMs <= 5000,
    });
    const cose = await (await fetch(String(hop.verify_url), { headers: { accept: 'application/cose' } })).arrayBuffer();
    const docBytes = Buffer.byteLength(doc);
    const headerBytes = Buffer.from(doc).toString('base64url').length;
    report(
      'witness',
      'receipt document (JSON at verify_url, two cosignatures)',
      `${docBytes} bytes`,
      `${hopBytes} bytes (hop answer)`,
      fmt.ratio(docBytes, hopBytes),
    );
    report(
      'witness',
      'receipt document as sent in Gate-Receipt (base64url)',
      `${headerBytes} bytes`,
      `${hopBytes} bytes (hop answer)`,
      fmt.ratio(headerBytes, hopBytes),
    );
    report(
      'witness',
      'receipt as COSE (Accept: application/cose)',
      `${cose.byteLength} bytes`,
      `${hopBytes} bytes (hop answer)`,
      fmt.ratio(cose.byteLength, hopBytes),
    );
  } finally {
    await Promise.all([plain.stop(), witnessed.stop(), ...witnesses.map((w) => w.close())]);
  }
}

/** The figure the issue asks for: the witnessed hop's throughput as a ratio of the unwitnessed one, target 0.95. */
async function compareHops(witnessed: Spawned, plain: Spawned, ours: HttpLoad, base: HttpLoad): Promise<void> {
  const {
    base: b,
    ours: o,
    range,
  } = await pairedLoads(
    ours.name,
    () => load(plain.url, base),
    () => load(witnessed.url, ours),
  );
  report('witness', 'hop throughput, two witnesses vs none', fmt.rps(o.rps), fmt.rps(b.rps), fmt.ratio(o.rps, b.rps) + range, {
    text: '>= 0.95x',
    met: o.rps >= 0.95 * b.rps,
  });
  report('witness', 'hop p99, two witnesses vs none', fmt.ms(o.p99), fmt.ms(b.p99), fmt.ratio(o.p99, b.p99));
}
