/**
 * The inference-root proxy (SPEC 2.5, foundry layer 1, "print"):
 *   POST /api/v1/inference/chat/completions      key, inference_seal 0.08
 *   GET  /api/v1/inference/sessions/{session_id}  key (its account)
 *
 * An OpenAI-compatible chat completion, forwarded to INFERENCE_UPSTREAM_URL
 * (+ "/chat/completions"). Each exchange is sealed: its leaf is
 *   SHA-256(0x00 || canonical JSON {"receipt_id", "request_sha256", "response_sha256"})
 * where the two hashes are over the canonical JSON of the request as sent and of
 * the upstream's answer, and the leaf joins the session's RFC 9162 Merkle tree.
 * The answer is the upstream's JSON with one member added, `fusegate` (the seal);
 * drop it before re-hashing the response. The caller's bearer key is never
 * forwarded; the upstream gets INFERENCE_UPSTREAM_KEY. Nothing is charged or
 * sealed when the upstream is not configured (503), fails (502) or times out (504).
 */
import { z } from 'zod';
import { canonicalJson, fingerprint } from '../../crypto/canonical.ts';
import { newId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { appendSessionLeaf, readSession, sessionSize } from '../../ledger/inference.ts';
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { chargeView, meteredAct, meteredWrite, receiptFields } from './metered.ts';
import { chargeSchema, receiptRef, ref } from './schemas.ts';
import { operation } from '../operation.ts';

export const SESSION_HEADER = 'fusegate-session';

export const chatRequest = z.looseObject({
  model: z.string().min(1).max(256),
  messages: z
    .array(z.looseObject({ role: z.string().min(1).max(64) }))
    .min(1)
    .max(10_000),
  stream: z.literal(false).optional().describe('streaming is not sealed: omit it or send false'),
});

const sealSchema = z.object({
  session_id: z.string(),
  index: z.number().describe("this exchange's leaf index in the session tree"),
  session_size: z.number(),
  session_root: z.string().describe("hex RFC 9162 root over the session's leaves"),
  request_sha256: z.string(),
  response_sha256: z.string(),
  leaf_hash: z.string(),
  charge: chargeSchema,
  ...receiptRef,
});
export const chatResponse = z.looseObject({ fusegate: sealSchema }).describe("the upstream's chat completion, unchanged, plus `fusegate`");

const sessionResponse = z.object({
  session_id: z.string(),
  size: z.number(),
  root: z.string(),
  leaves: z.array(z.object({ idx: z.number(), leaf_hash: z.string(), receipt_id: z.string(), created_at: z.string() })),
});

const sessionFull = (id: string, max: number) =>
  new Problem({
    status: 409,
    code: 'session_full',
    title: 'Conflict',
    detail: `session ${id} holds ${max} sealed exchanges, the most one session may; omit the ${SESSION_HEADER} header to open a new one`,
  });

async function forward(ctx: AppContext, body: unknown): Promise<unknown> {
  const c = ctx.config;
  const upstream = `${c.INFERENCE_UPSTREAM_URL}/chat/completions`;
  let res: Response;
  try {
    res = await fetch(upstream, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(c.INFERENCE_UPSTREAM_KEY ? { authorization: `Bearer ${c.INFERENCE_UPSTREAM_KEY}` } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(c.INFERENCE_TIMEOUT_MS),
      redirect: 'error',
    });
  } catch (e) {
    const timeout = (e as Error).name === 'TimeoutError';
    throw new Problem({
      status: timeout ? 504 : 502,
      code: timeout ? 'upstream_timeout' : 'upstream_unreachable',
      title: timeout ? 'Gateway timeout' : 'Bad gateway',
      detail: timeout
        ? `the inference upstream did not answer within ${c.INFERENCE_TIMEOUT_MS} ms; nothing was sealed or charged`
        : 'the inference upstream could not be reached; nothing was sealed or charged',
    });
  }
  const text = await res.text();
  if (!res.ok) {
    throw new Problem({
      status: 502,
      code: 'upstream_error',
      title: 'Bad gateway',
      detail: `the inference upstream answered ${res.status}; nothing was sealed or charged`,
      extra: { upstream_status: res.status },
    });
  }
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
    return value;
  } catch {
    throw new Problem({
      status: 502,
      code: 'upstream_not_json',
      title: 'Bad gateway',
      detail: 'the inference upstream did not answer a JSON object; nothing was sealed or charged',
    });
  }
}

export function registerInferenceRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/inference/chat/completions',
      auth: 'key',
      tool: 'inference_chat',
      summary:
        'OpenAI-compatible chat completion through the inference-root proxy: forwarded to the configured upstream, the exchange sealed as a leaf of the session Merkle tree (send Fusegate-Session to continue a session)',
      tag: 'foundry',
      body: chatRequest,
      response: chatResponse,
      problems: [404, 409, 502, 503, 504],
      charges: ['inference_seal'],
      example: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Summarise the claim file in three lines.' }] },
      act: {},
    },
    async ({ input: body, key, event, bill }) => {
      const named = event.req.headers.get(SESSION_HEADER);
      if (named !== null && !ref.safeParse(named).success)
        throw new Problem({
          status: 400,
          code: 'invalid_session',
          title: 'Bad request',
          detail: `${SESSION_HEADER} must be 1 to 128 visible ASCII characters`,
        });
      // After the request is validated (a bad request is a 400 whatever the configuration).
      if (!ctx.config.INFERENCE_UPSTREAM_URL) {
        throw new Problem({
          status: 503,
          code: 'inference_upstream_not_configured',
          title: 'Service unavailable',
          detail:
            'this gate has no inference upstream: the operator sets INFERENCE_UPSTREAM_URL (an OpenAI-compatible base URL) to enable the proxy; nothing was charged',
        });
      }
      const max = ctx.config.INFERENCE_SESSION_MAX_EXCHANGES;
      if (named !== null) {
        const held = await sessionSize(ctx.ledger.read, ownerId(key), named);
        if (held === undefined)
          throw notFound(`no inference session ${named} in this account; omit ${SESSION_HEADER} to open one`, 'unknown_session');
        if (held >= max) throw sessionFull(named, max);
      }
      const sessionId = named ?? newId('inf');
      const answer = await forward(ctx, body);
      const requestSha = fingerprint(body);
      const responseSha = fingerprint(answer);
      const charge = bill('inference_seal');
      return meteredWrite(
        event,
        ctx,
        key,
        {
          kind: 'inference_seal',
          decision: 'SEALED',
          subject: sessionId,
          fingerprint: requestSha,
          data: { session_id: sessionId, request_sha256: requestSha, response_sha256: responseSha, model: body.model },
        },
        [charge],
        async (tx, receipt) => {
          const exchange = Buffer.from(
            canonicalJson({ receipt_id: receipt.receipt_id, request_sha256: requestSha, response_sha256: responseSha }),
          );
          const added = await appendSessionLeaf(
            tx,
            { owner: ownerId(key), sessionId, leaf: exchange, receiptId: receipt.receipt_id, createdAt: nowIso() },
            max,
          );
          if (!added) throw sessionFull(sessionId, max); // filled by a concurrent exchange
          const { idx, size, root, leafHash: leaf } = added;
          const seal = {
            session_id: sessionId,
            index: idx,
            session_size: size,
            session_root: root,
            request_sha256: requestSha,
            response_sha256: responseSha,
            leaf_hash: leaf,
            charge: chargeView(charge),
            ...receiptFields(receipt),
          };
          return reply({ ...(answer as Record<string, unknown>), fusegate: seal }, 200, { [SESSION_HEADER]: sessionId });
        },
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/inference/sessions/:session_id',
      tool: 'inference_session',
      summary: 'An inference session of this account: its leaves in order and their Merkle root',
      auth: 'key',
      tag: 'foundry',
      response: sessionResponse,
      problems: [404],
    },
    async ({ key, params }) => {
      const id = params.session_id ?? '';
      const session = await readSession(ctx.ledger.read, ownerId(key), id);
      if (!session) throw notFound(`no inference session ${id} in this account`, 'unknown_session');
      return reply({ session_id: id, ...session });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/inference/reasoning-seal',
      auth: 'key',
      summary:
        "reasoning_seal (foundry layer 1): seals a commitment to a model's reasoning together with its inference session's root, in the receipts log; the reasoning itself is never public",
      tag: 'foundry',
      body: reasoningSealRequest,
      problems: [404],
      charges: ['inference_seal'],
      example: { session_id: 'inf_…', reasoning: 'The claim file shows three prior incidents, so…' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const session = await readSession(ctx.ledger.read, ownerId(key), b.session_id);
      if (!session) throw notFound(`no inference session ${b.session_id} in this account`, 'unknown_session');
      const charge = bill('inference_seal');
      const data = {
        session_root: session.root,
        session_size: session.size,
        ...(b.reasoning !== undefined ? { reasoning: b.reasoning } : { reasoning_sha256: b.reasoning_sha256 }),
      };
      return meteredAct(
        event,
        ctx,
        key,
        { kind: 'reasoning_seal', decision: 'SEALED', subject: b.session_id, data },
        [charge],
        (receipt) => ({
          reply: reply({
            object: 'reasoning_seal',
            session_id: b.session_id,
            session_root: session.root,
            session_size: session.size,
            reasoning_commitment: receipt.payload.data?.reasoning ?? null,
            reasoning_sha256: b.reasoning_sha256 ?? null,
            charge: chargeView(charge),
            ...receiptFields(receipt),
          }),
        }),
        { commit: ['data.reasoning'] },
      );
    },
  );
}

export const reasoningSealRequest = z
  .strictObject({
    session_id: ref.describe('an inference session of this account (the Fusegate-Session id)'),
    reasoning: z
      .string()
      .min(1)
      .max(100_000)
      .optional()
      .describe('the reasoning text: the receipt holds a salted commitment to it, the account reads the opening'),
    reasoning_sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, '64 lowercase hex characters')
      .optional()
      .describe('or your own commitment (SHA-256 hex) to reasoning you keep'),
  })
  .refine((b) => (b.reasoning === undefined) !== (b.reasoning_sha256 === undefined), {
    message: 'send exactly one of reasoning or reasoning_sha256',
    path: ['reasoning'],
  });
