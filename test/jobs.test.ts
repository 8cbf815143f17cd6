/**
 * Background jobs start with the server and stop with it: describing the API
 * starts none (and fails loudly when registration touches the ledger, even if
 * the touching code swallows the error), and close() waits for the work in flight.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { describeRoutes } from '../src/api/describe.ts';
import { intervalJob } from '../src/api/jobs.ts';
import { Deliverer } from '../src/api/site/webhooks.ts';
import type { AppContext } from '../src/api/context.ts';
import { loadConfig } from '../src/config.ts';
import { openLedger } from '../src/ledger/db.ts';
import { deliveriesOf } from '../src/ledger/webhooks.ts';
import { startTestServer } from './support/server.ts';

describe('describing the API', () => {
  it('declares the webhook, clearing, witnessing, drill fuse, review expiry and request log jobs without starting them', () => {
    const router = describeRoutes(loadConfig({}));
    expect(router.routes.length).toBeGreaterThan(50);
    // Witnessing is always declared; it submits nothing unless WITNESS_POLICY names witnesses.
    expect(router.jobs.map((j) => j.name).sort()).toEqual([
      'clearing seal',
      'drill fuse restore',
      'request log retention',
      'review expiry',
      'webhook delivery',
      'witnessing',
    ]);
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
    // The job's timer is driven by hand (fake timers) and each tick's work ends when the test says so.
    vi.useFakeTimers();
    try {
      const logged: string[] = [];
      const ctx = { log: (_l: string, msg: string) => logged.push(msg) } as unknown as AppContext;
      let ticks = 0;
      let running = 0;
      let maxRunning = 0;
      let finished = 0;
      const ends: Array<() => void> = [];
      const job = intervalJob(ctx, 'probe', 5, async () => {
        const n = ++ticks;
        running++;
        maxRunning = Math.max(maxRunning, running);
        await new Promise<void>((end) => ends.push(end));
        running--;
        finished++;
        if (n === 1) throw new Error('first tick fails');
      });
      job.start();
      await vi.advanceTimersByTimeAsync(5);
      expect(ticks).toBe(1);
      // Ten more periods while the first tick works: none starts beside it.
      await vi.advanceTimersByTimeAsync(50);
      expect([ticks, running]).toEqual([1, 1]);
      ends[0]!();
      await vi.advanceTimersByTimeAsync(5);
      expect(logged).toContain('probe failed');
      expect(ticks).toBe(2);
      // stop() waits for the tick in flight, then no tick runs again.
      let stopped = false;
      const stopping = job.stop().then(() => (stopped = true));
      await vi.advanceTimersByTimeAsync(50);
      expect([stopped, ticks]).toEqual([false, 2]);
      ends[1]!();
      await stopping;
      expect([running, finished, maxRunning]).toEqual([0, 2, 1]);
      await vi.advanceTimersByTimeAsync(100);
      expect(ticks).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the server', () => {
  it('delivers webhooks once listening, and close() waits for the attempt in flight to be recorded', async () => {
    // The receiver holds its answer until the test gives it: the server is closed while the attempt is in flight.
    let answer!: ServerResponse;
    const receiver = createServer();
    const arrived = new Promise<void>((resolve) => {
      receiver.once('request', (req, res: ServerResponse) => {
        req.resume();
        answer = res;
        resolve();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const s = await startTestServer({ CLEARING_INTERVAL_HOURS: '0', WEBHOOK_POLL_MS: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    try {
      const key = await s.newKey('hooks');
      expect((await s.fetch('/signal/trigger/webhooks', { key: key.secret, json: { url } })).status).toBe(201);
      const published = await s.fetch('/signal/trigger/publish', {
        key: key.secret,
        json: { template_id: 'bind_gate_hold', threshold: { metric: 'holds', operator: 'gte', value: '1' } },
      });
      expect(published.status).toBe(201);
      await arrived;
      const closing = s.close();
      answer.writeHead(204).end();
      await closing;
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
