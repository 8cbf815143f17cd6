/**
 * Background jobs start with the server and stop with it: describing the API
 * starts none (and fails loudly when registration touches the ledger, even if
 * the touching code swallows the error), and close() waits for the work in flight.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { describeRoutes } from '../src/api/describe.ts';
import { intervalJob } from '../src/api/jobs.ts';
import { Deliverer } from '../src/api/site/webhooks.ts';
import type { AppContext } from '../src/api/context.ts';
import { loadConfig } from '../src/config.ts';
import { openLedger } from '../src/ledger/db.ts';
import { deliveriesOf } from '../src/ledger/webhooks.ts';
import { startTestServer } from './support/server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('describing the API', () => {
  it('declares the webhook, clearing, witnessing and drill fuse jobs without starting them', () => {
    const router = describeRoutes(loadConfig({}));
    expect(router.routes.length).toBeGreaterThan(50);
    // Witnessing is always declared; it submits nothing unless WITNESS_POLICY names witnesses.
    expect(router.jobs.map((j) => j.name).sort()).toEqual(['clearing seal', 'drill fuse restore', 'webhook delivery', 'witnessing']);
  });

  it('fails loudly when registration touches the ledger, even when the error is caught', () => {
    const swallowing = (_r: unknown, ctx: AppContext) => {
      try {
        void ctx.ledger.read;
      } catch {
        // a module that hides its mistake
      }
    };
    expect(() => describeRoutes(loadConfig({}), [swallowing])).toThrow(/touched ledger\.read/);
    // The old way: a job started at registration touched the ledger in a promise whose error it logged.
    const startsAJob = (_r: unknown, ctx: AppContext) => new Deliverer(ctx).start();
    expect(() => describeRoutes(loadConfig({}), [startsAJob])).toThrow(/touched ledger\.write/);
  });
});

describe('interval jobs', () => {
  it('never overlap, log a failing tick and go on, and stop after the tick in flight', async () => {
    const logged: string[] = [];
    const ctx = { log: (_l: string, msg: string) => logged.push(msg) } as unknown as AppContext;
    let ticks = 0;
    let running = 0;
    let maxRunning = 0;
    let finished = 0;
    const job = intervalJob(ctx, 'probe', 5, async () => {
      const n = ++ticks;
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(40);
      running--;
      finished++;
      if (n === 1) throw new Error('first tick fails');
    });
    job.start();
    while (ticks < 2) await sleep(5);
    await job.stop();
    expect(running).toBe(0);
    expect(finished).toBe(ticks);
    expect(maxRunning).toBe(1);
    expect(logged).toContain('probe failed');
    const after = ticks;
    await sleep(60);
    expect(ticks).toBe(after);
  });
});

describe('the server', () => {
  it('delivers webhooks once listening, and close() waits for the attempt in flight to be recorded', async () => {
    let arrived = 0;
    const receiver: Server = createServer((req, res) => {
      req.resume();
      arrived++;
      // Answer slowly: the server is closed while this attempt is in flight.
      setTimeout(() => res.writeHead(204).end(), 300);
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const s = await startTestServer({ CLEARING_INTERVAL_HOURS: '0', WEBHOOK_POLL_MS: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    try {
      const key = await s.newKey('hooks');
      expect((await s.fetch('/signal/trigger/webhooks', { key: key.secret, json: { url } })).status).toBe(201);
      const published = await s.fetch('/signal/trigger/publish', { key: key.secret, json: { template_id: 'bind_gate_hold', threshold: { metric: 'holds', operator: 'gte', value: '1' } } });
      expect(published.status).toBe(201);
      while (arrived < 1) await sleep(10);
      await s.close();
      const ledger = await openLedger(s.config);
      try {
        const [delivery] = await deliveriesOf(ledger.read, key.id);
        expect(delivery).toMatchObject({ event_type: 'trigger.published', state: 'delivered' });
        expect(delivery!.attempts.map((a) => a.status)).toEqual([204]);
      } finally {
        await ledger.close();
      }
    } finally {
      await s.stop().catch(() => undefined);
      await new Promise((r) => receiver.close(r));
    }
  });
});
