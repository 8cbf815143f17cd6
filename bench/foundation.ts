/** Foundation figures: GET /health and GET /v1/me against the bare node:http baseline. */
import { cliJson, compareHttp, spawnBaseline, spawnServer } from './lib.ts';

export async function benchFoundation(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    await compareHttp('foundation', server, baseline, { name: 'GET /health', path: '/health', target: { ratio: 0.6 } });
    await compareHttp('foundation', server, baseline, {
      name: 'GET /v1/me',
      path: '/v1/me',
      target: { ratio: 0.8 },
      headers: { authorization: `Bearer ${String(key)}` },
    });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}
