/**
 * The request log's cost (docs/request-log.md): the same loads on two servers,
 * one with REQUEST_LOG_ENABLED=false as the baseline and one with the log on
 * (the default), in alternating rounds (lib.ts pairedLoads): the hop, and
 * GET /v1/me, the cheapest keyed answer, where a cost per request shows most.
 * What it should show is no difference beyond the rounds' own spread.
 */
import { fmt, hopLoad, load, pairedLoads, report, spawnServer, type HttpLoad } from './lib.ts';

export async function benchRequestLog(): Promise<void> {
  const on = await spawnServer({ REQUEST_LOG_ENABLED: 'true' });
  const off = await spawnServer({ REQUEST_LOG_ENABLED: 'false' });
  try {
    const { key: keyOn, load: hopOn } = await hopLoad(on, 'POST /v1/fuse/hop');
    const { key: keyOff, load: hopOff } = await hopLoad(off, 'POST /v1/fuse/hop');
    const me = (key: string): HttpLoad => ({ name: 'GET /v1/me', path: '/v1/me', headers: { authorization: `Bearer ${key}` } });
    for (const [lOn, lOff] of [
      [hopOn, hopOff],
      [me(keyOn), me(keyOff)],
    ] as const) {
      const { base, ours, range } = await pairedLoads(
        lOn.name,
        () => load(off.url, lOff),
        () => load(on.url, lOn),
      );
      const name = `${lOn.name} with the request log on (baseline: off)`;
      report('request-log', `${name} throughput`, fmt.rps(ours.rps), fmt.rps(base.rps), fmt.ratio(ours.rps, base.rps) + range);
      report('request-log', `${name} p99`, fmt.ms(ours.p99), fmt.ms(base.p99), fmt.ratio(ours.p99, base.p99));
    }
  } finally {
    await Promise.all([on.stop(), off.stop()]);
  }
}
