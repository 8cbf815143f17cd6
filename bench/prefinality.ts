/**
 * Pre-finality figures: POST /v1/prefinality/evaluate on the GO path (the JWT
 * signed per answer, the log receipt batch-sealed; one metered act) and
 * POST /v1/prefinality/verify, each against the bare node:http baseline.
 */
import { cliJson, compareHttp, EVALUATE_GO, spawnBaseline, spawnServer } from './lib.ts';

export async function benchPrefinality(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const auth = { authorization: `Bearer ${String(key)}` };
    const first = await fetch(server.url + '/v1/prefinality/evaluate', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: EVALUATE_GO,
    });
    if (first.status !== 200) throw new Error(`evaluate answered ${first.status}`);
    const { receipt_jwt } = (await first.json()) as { receipt_jwt: string };
    await compareHttp('prefinality', server, baseline, {
      name: 'POST /v1/prefinality/evaluate (GO, JWT signed)',
      method: 'POST',
      path: '/v1/prefinality/evaluate',
      headers: auth,
      body: EVALUATE_GO,
      target: { ratio: 0.25 },
    });
    await compareHttp('prefinality', server, baseline, {
      name: 'POST /v1/prefinality/verify',
      method: 'POST',
      path: '/v1/prefinality/verify',
      body: JSON.stringify({ receipt: receipt_jwt }),
    });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}
