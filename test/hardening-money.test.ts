import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHARGE_MICROS, formatUsd } from '../src/catalog/money.ts';
import type { ActPlan } from '../src/ledger/acts.ts';
import { PROCESS_TEST_TIMEOUT_MS, runCli } from './support/cli.ts';
import { startTestServer, testEnv, type TestServer } from './support/server.ts';

describe('money stays exact past 2^53 and 2^63 micro-USD', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  let expected = 0n;

  /** An act whose receipt states one charge, as every metered route's does. */
  const charging = (amountMicros: bigint | number): ActPlan<void> => ({
    needs: {},
    decide: (state) => ({
      writes: {
        receipt: state.receipt(
          s.ctx,
          { kind: 'sharp', decision: 'ALLOCATED', key_id: key.id },
          { charges: [{ keyId: key.id, sku: 'sharp', amountMicros }] },
        ),
      },
      result: undefined,
    }),
  });

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('big spender');
  });
  afterAll(() => s.stop());

  it('eight maximal SHARP slices (1,200,000,000.00 each) pass 2^53 micro-USD and every total stays exact', async () => {
    for (let i = 0; i < 8; i++) {
      const r = await s.fetch('/api/v1/orn/sharp', {
        key: key.secret,
        json: { graph_id: `g${i}`, agents_in_graph: 10000, events: 100000 },
      });
      expect(r.status).toBe(200);
      const b = await r.json();
      expect(b.charge.amount_usd).toBe('1200000000.00');
      expected += 1_200_000_000_000_000n;
    }
    expect(expected > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    const me = await (await s.fetch('/v1/me', { key: key.secret })).json();
    expect(me.usage.total_usd).toBe(formatUsd(expected));
    expect(me.usage.total_usd).toBe('9600000000.00');
    const clear = await s.fetch('/api/v1/clear/usage', { key: key.secret });
    expect(clear.status).toBe(200);
    expect((await clear.json()).total_usd).toBe('9600000000.00');
    const nap = await s.fetch('/api/v1/nap/usage', { key: key.secret });
    expect(nap.status).toBe(200);
    expect(await nap.json()).toMatchObject({ total_usd: '9600000000.00', nap_usd: '0.00', nap_share_of_spend: 0 });
  });

  it(
    'past 2^63 micro-USD (where SQLite SUM of INTEGER overflows) usage and the sealed clearing total stay exact',
    async () => {
      // 1,100 more charges at the bound (and one odd cent: charges are whole cents), each stated by its own receipt:
      // 9.9e18 micro-USD on top, past 2^63 = 9.22e18.
      for (let i = 0; i < 1100; i += 100)
        await Promise.all(Array.from({ length: 100 }, () => s.ctx.ledger.act(charging(MAX_CHARGE_MICROS))));
      await s.ctx.ledger.act(charging(10_000));
      expected += 1100n * MAX_CHARGE_MICROS + 10_000n;
      expect(expected > 2n ** 63n).toBe(true);
      const me = await s.fetch('/v1/me', { key: key.secret });
      expect(me.status).toBe(200);
      expect((await me.json()).usage.total_usd).toBe(formatUsd(expected));
      expect((await (await s.fetch('/api/v1/clear/usage', { key: key.secret })).json()).total_usd).toBe('9909600000000.01');

      // The CLI seals the same way the timer does, in its own process, on the same file.
      const r = await runCli(['clearing', 'seal', '--json'], testEnv(s.dir));
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.attestation.total_usd).toBe('9909600000000.01');
      expect(out.attestation.per_sku).toEqual([
        { sku: 'sharp', nap: false, count: 1109, amount_micros: expected.toString(), amount_usd: formatUsd(expected) },
      ]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it('a charge past the documented bound is refused before it is written', async () => {
    await expect(s.ctx.ledger.act(charging(MAX_CHARGE_MICROS + 1n))).rejects.toThrow(/outside/);
  });

  it('money inputs past 9 integer digits are a 400 naming the field (PAS premium included), and charge nothing', async () => {
    const before = (await (await s.fetch('/v1/me', { key: key.secret })).json()).usage.total_usd;
    const r = await s.fetch('/v1/pas/mga-authority', {
      key: key.secret,
      json: { fuse_id: 'fuse_x', grant_id: 'auth_x', premium: '1000000000.00', line: 'cyber', state: 'CA' },
    });
    expect(r.status).toBe(400);
    const p = await r.json();
    expect(p.errors.map((e: { field: string }) => e.field)).toContain('premium');
    const orn = await s.fetch('/api/v1/orn/sharp', { key: key.secret, json: { graph_id: 'g', agents_in_graph: 10001, events: 1 } });
    expect(orn.status).toBe(400);
    expect((await orn.json()).errors[0].field).toBe('agents_in_graph');
    expect((await (await s.fetch('/v1/me', { key: key.secret })).json()).usage.total_usd).toBe(before);
  });
});
