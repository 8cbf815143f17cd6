import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppContext } from '../src/api/context.ts';
import { retryDelayMs, signDelivery } from '../src/api/site/webhooks.ts';
import { loadKeyring, rotateSigningKey } from '../src/crypto/keys.ts';
import { untilCommitted } from './support/commits.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';

describe('webhook retry policy', () => {
  it('backs off exponentially over hours, capped at an hour, with ±25% jitter', () => {
    expect(retryDelayMs(1, 5000, 0.5)).toBe(5000);
    expect(retryDelayMs(2, 5000, 0.5)).toBe(10_000);
    expect(retryDelayMs(20, 5000, 0.5)).toBe(3_600_000);
    expect(retryDelayMs(3, 5000, 0)).toBe(15_000);
    expect(retryDelayMs(3, 5000, 0.999999)).toBeLessThanOrEqual(25_000);
    // The default schedule (16 attempts from 5 s) spans hours, not minutes.
    const total = Array.from({ length: 15 }, (_, i) => retryDelayMs(i + 1, 5000, 0.5)).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(6 * 3_600_000);
  });
});

describe('webhook subscriptions that keep failing are disabled', () => {
  let s: TestServer | undefined;
  let hook: Receiver | undefined;
  afterEach(async () => {
    await s?.stop();
    await hook?.close();
  });

  async function setUp(status: number, env: Record<string, string>) {
    hook = await startReceiver(status);
    s = await startTestServer({
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_BACKOFF_MS: '50',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      CLEARING_INTERVAL_HOURS: '0',
      ...env,
    });
    const key = await s.newKey('hooks');
    const sub = await (await s.fetch('/signal/trigger/webhooks', { key: key.secret, json: { url: hook.url() } })).json();
    const publish = () =>
      s!.fetch('/signal/trigger/publish', {
        key: key.secret,
        json: { template_id: 'bind_gate_hold', threshold: { metric: 'holds', operator: 'gte', value: '1' } },
      });
    return { key, sub, publish };
  }

  const subscription = async (id: string) =>
    (
      await s!.ctx.ledger.read.execute({
        sql: 'SELECT disabled_at, disabled_reason, consecutive_failures FROM webhook_subscriptions WHERE id = ?',
        args: [id],
      })
    ).rows[0]!;
  /** Deliveries of the subscription still to be attempted: none means no request can follow. */
  const pending = async (id: string) =>
    (
      await s!.ctx.ledger.read.execute({
        sql: "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE subscription_id = ? AND state = 'pending'",
        args: [id],
      })
    ).rows[0]!.n;

  it('at once on 410 Gone, failing its other pending deliveries', async () => {
    const { key, sub, publish } = await setUp(410, {});
    expect((await publish()).status).toBe(201);
    await untilCommitted(s!.ctx.ledger, async () => (await subscription(sub.id)).disabled_at !== null);
    expect((await subscription(sub.id)).disabled_reason).toMatch(/410/);
    const listed = await (await s!.fetch('/signal/trigger/webhooks', { key: key.secret })).json();
    expect(listed.subscriptions).toEqual([]);
    expect(listed.disabled_subscriptions).toEqual([
      expect.objectContaining({ id: sub.id, disabled_reason: 'the subscriber answered 410 Gone' }),
    ]);
    expect(hook!.calls).toHaveLength(1);
    // Later events are not queued for it: nothing pending, so no request can follow.
    expect((await publish()).status).toBe(201);
    expect(await pending(sub.id)).toBe(0);
    expect(hook!.calls).toHaveLength(1);
  });

  it('after WEBHOOK_DISABLE_AFTER_FAILURES failed attempts in a row', async () => {
    const { sub, publish } = await setUp(500, { WEBHOOK_DISABLE_AFTER_FAILURES: '3', WEBHOOK_MAX_ATTEMPTS: '10' });
    expect((await publish()).status).toBe(201);
    await untilCommitted(s!.ctx.ledger, async () => (await subscription(sub.id)).disabled_at !== null);
    expect(await subscription(sub.id)).toMatchObject({ consecutive_failures: 3, disabled_reason: '3 failed attempts in a row' });
    // Disabling failed what was pending: no request can follow the three made.
    expect(await pending(sub.id)).toBe(0);
    expect(hook!.calls).toHaveLength(3);
  });
});

describe('webhook signatures during a signing-key rotation', () => {
  const verifyWith = async (jwk: JsonWebKey, sig: string, content: string) => {
    const k = await crypto.subtle.importKey('jwk', jwk, { name: 'Ed25519' }, false, ['verify']);
    return crypto.subtle.verify('Ed25519', k, Buffer.from(sig, 'base64'), new TextEncoder().encode(content));
  };

  it('signs with both keys during the overlap, each verifiable by its kid, then with the new key only', async () => {
    const file = join(tempDir(), 'keys.json');
    const old = await loadKeyring({ SIGNING_KEY_FILE: file });
    const ring = await rotateSigningKey(file, 3_600_000);
    expect(ring.cosigning.map((k) => k.kid)).toEqual([old.current.kid]);
    const d = { event_id: 'evt_1', body: '{"type":"trigger.fired"}' };
    const h = signDelivery({ keyring: ring } as AppContext, d, 1_800_000_000_000);
    const kids = h['webhook-key-id']!.split(' ');
    const sigs = h['webhook-signature']!.split(' ').map((x) => x.split(',')[1]!);
    expect(kids).toEqual([ring.current.kid, old.current.kid]);
    const content = `evt_1.${h['webhook-timestamp']}.${d.body}`;
    for (const [i, kid] of kids.entries()) expect(await verifyWith(ring.byKid(kid)!.jwk as JsonWebKey, sigs[i]!, content)).toBe(true);
    expect(await verifyWith(ring.byKid(kids[1]!)!.jwk as JsonWebKey, sigs[0]!, content)).toBe(false);

    // Past the overlap the old private half is discarded from the file and the old key stops signing. The
    // overlap's end is moved into the past in the file, as its hour passing would, rather than waited for.
    const again = await rotateSigningKey(file, 3_600_000);
    const inFile = JSON.parse(readFileSync(file, 'utf8')) as { keys: Array<{ cosign_until?: string }> };
    for (const k of inFile.keys) if (k.cosign_until) k.cosign_until = new Date(Date.now() - 1000).toISOString();
    writeFileSync(file, JSON.stringify(inFile));
    const later = await loadKeyring({ SIGNING_KEY_FILE: file });
    expect(later.cosigning).toEqual([]);
    expect(later.current.kid).toBe(again.current.kid);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { keys: Array<{ private_jwk?: unknown }> };
    expect(stored.keys.filter((k) => k.private_jwk)).toHaveLength(1);
    expect(signDelivery({ keyring: later } as AppContext, d)['webhook-signature']!.split(' ')).toHaveLength(1);
  });
});
