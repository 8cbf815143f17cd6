/**
 * Idempotency-Key for metered POSTs, as the IETF draft and Stripe behave:
 *  - a retry with the same key and the same request returns the first answer,
 *    and the act is performed (and charged) once;
 *  - the same key with a different request: 422;
 *  - a retry while the first is still running: 409.
 *
 * The first answer is stored in the SAME transaction as the act's effects
 * (api/act.ts takes the reservation), so an answer is never lost between the
 * effect and its record.
 * A reservation whose request died before committing is abandoned after
 * RESERVATION_LEASE_MS and may be taken again: nothing of it was committed.
 */
import { createHash } from 'node:crypto';
import type { H3Event, HTTPResponse } from 'h3';
import type { ActEvent } from './act-event.ts';
import { releaseReservation, reserveIdempotencyKey, storeAnswer, type StoredAnswer } from '../ledger/idempotency.ts';
import type { ApiKey } from '../ledger/api-keys.ts';
import { readJsonValue } from './body.ts';
import type { AppContext } from './context.ts';
import { Problem, badRequest } from './problem.ts';
import { type Reply, toResponse } from './reply.ts';
import { actResponse, noteReceipt } from './request-notes.ts';

declare module 'h3' {
  interface H3EventContext {
    /** The Idempotency-Key reservation the request holds until its answer is recorded (undefined once it is). */
    idempotency?: Reservation | undefined;
  }
}

const HEADER = 'idempotency-key';
const RESERVATION_LEASE_MS = 60_000;

interface Reservation {
  keyId: string;
  idemKey: string;
}

/** Hash of what makes two requests "the same": method, path and query, and the exact body text. */
async function requestHash(event: H3Event, ctx: AppContext): Promise<string> {
  const hasBody = event.req.headers.get('content-type') !== null || Number(event.req.headers.get('content-length') ?? 0) > 0;
  const text = hasBody ? (await readJsonValue(event, ctx.config.MAX_BODY_BYTES)).text : '';
  return createHash('sha256').update(`${event.req.method} ${event.url.pathname}${event.url.search}\n${text}`).digest('hex');
}

/**
 * Runs a metered POST under its Idempotency-Key (when the request has one).
 * `handler` must make its effects through `commitAct` (api/act.ts).
 */
export async function idempotent(
  event: H3Event,
  ctx: AppContext,
  key: ApiKey,
  handler: () => Promise<Reply>,
  /** Applied to a replayed answer as the handler applied it to the first (api/act.ts `after`). */
  after: (r: Reply) => Reply = (r) => r,
): Promise<HTTPResponse> {
  const idemKey = event.req.headers.get(HEADER);
  if (idemKey === null) return actResponse(event, await handler());
  if (!/^[\x21-\x7e]{1,255}$/.test(idemKey)) {
    throw badRequest('invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  }
  const hash = await requestHash(event, ctx);
  const prior = await ctx.ledger.write((tx) =>
    reserveIdempotencyKey(tx, { keyId: key.id, idemKey, hash, now: new Date(), leaseMs: RESERVATION_LEASE_MS }),
  );
  if (prior) {
    if (prior.request_hash !== hash) {
      throw new Problem({
        status: 422,
        code: 'idempotency_key_reused',
        title: 'Idempotency-Key reused',
        detail: 'this Idempotency-Key was already used with a different request',
      });
    }
    if (prior.state === 'running') {
      // A request that died before committing holds its key for the lease, then the key is free.
      const takenAt = Date.parse(prior.created_at);
      const expires = new Date(takenAt + RESERVATION_LEASE_MS);
      const left = Math.max(1, Math.ceil((expires.getTime() - Date.now()) / 1000));
      throw new Problem({
        status: 409,
        code: 'idempotency_in_progress',
        title: 'Request in progress',
        detail: `a request with this Idempotency-Key is still being processed; retry later. A request interrupted before it committed holds the key for ${RESERVATION_LEASE_MS / 1000} s (until ${expires.toISOString()}); then a retry runs it anew`,
        headers: { 'retry-after': '1' },
        extra: {
          in_progress_since: new Date(takenAt).toISOString(),
          lease_seconds: RESERVATION_LEASE_MS / 1000,
          lease_expires_at: expires.toISOString(),
          lease_seconds_left: left,
        },
      });
    }
    const stored: Reply = {
      status: Number(prior.status),
      body: JSON.parse(String(prior.body)),
      headers: JSON.parse(prior.headers ?? '{}') as Record<string, string>,
    };
    const replayed = after(stored);
    noteReceipt(event, replayed);
    return toResponse(replayed, { 'idempotent-replayed': 'true' });
  }
  const reservation: Reservation = { keyId: key.id, idemKey };
  event.context.idempotency = reservation;
  try {
    const r = await handler();
    if (event.context.idempotency) {
      // The handler committed no act (a read or a refusal): record the answer now.
      await ctx.ledger.write((tx) => storeAnswer(tx, answerOf(reservation, r)));
    }
    return actResponse(event, r);
  } catch (error) {
    // Nothing was committed: free the key so that a corrected retry can run.
    await ctx.ledger.write((tx) => releaseReservation(tx, key.id, idemKey)).catch(() => undefined);
    throw error;
  }
}

/** The answer to store under the reservation. */
export const answerOf = (r: Reservation, reply: Reply): StoredAnswer => ({
  keyId: r.keyId,
  idemKey: r.idemKey,
  status: reply.status,
  headers: reply.headers ?? {},
  body: reply.body,
});

/** The request's open reservation: the act that commits records its answer under it (api/act.ts). */
export const openReservation = (event: ActEvent): Reservation | undefined => event.context.idempotency;

/**
 * Says the answer was recorded with the act's commit, so that `idempotent`
 * does not record it again. Only after a commit: an attempt that failed (and
 * is retried, or answered with a problem) leaves the reservation open.
 */
export function answerRecorded(event: ActEvent): void {
  event.context.idempotency = undefined;
}
