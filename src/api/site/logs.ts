/**
 * Public HTTP API of the Merkle logs (every log, by name): tree heads,
 * signed checkpoints, entries, inclusion and consistency proofs.
 * Hashes are standard base64 in JSON, as in the C2SP and transparency-dev formats.
 */
import { HTTPResponse, type H3Event } from 'h3';
import { z } from 'zod';
import { logOrigin, logVerifierKeys } from '../../ledger/checkpoint.ts';
import { cosignedCheckpoint, latestWitnessed, witnessStates } from '../../ledger/witnesses.ts';
import { Witnessing } from '../witnessing.ts';
import { formatWitnessPolicy } from '../../crypto/witness-policy.ts';
import {
  LogRangeError,
  UnknownLogError,
  consistencyProof,
  inclusionProof,
  listLogs,
  logSize,
  readEntries,
  treeHead,
} from '../../ledger/log.ts';
import type { AppContext } from '../context.ts';
import { badRequest, notFound } from '../problem.ts';
import { reply, toResponse } from '../reply.ts';
import type { Router } from '../router.ts';
import { decodeLeaf } from './leaf-decoders.ts';
import { logGrowth } from '../../ledger/log-growth.ts';
import { TILED_LOGS, tilesUrl } from './tiles.ts';
import { base64 as b64 } from '../../crypto/base64.ts';
import { operation } from '../operation.ts';

const index = z.coerce.number().int().nonnegative();
const entriesQuery = z.object({ start: index.default(0), limit: z.coerce.number().int().min(1).max(1000).default(100) });
const inclusionQuery = z.object({ index, tree_size: index });
const consistencyQuery = z.object({ from: index, to: index });
const checkpointQuery = z.object({
  size: index.optional(),
  witnessed: z.enum(['true', 'false']).optional().describe('true: the newest checkpoint a witness cosigned (404 when none has)'),
});
const growthQuery = z.object({ points: z.coerce.number().int().min(2).max(200).default(48) });

const PUBLIC = { 'access-control-allow-origin': '*' };

function logName(event: H3Event): string {
  const name = event.context.params?.log ?? '';
  if (!/^[a-z0-9_-]{1,64}$/.test(name)) throw notFound(`no log named ${name}`, 'unknown_log');
  return name;
}

/** Maps the log engine's errors to problems: unknown log 404, out-of-range 400. */
async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof UnknownLogError) throw notFound(e.message, 'unknown_log');
    if (e instanceof LogRangeError) throw badRequest('out_of_range', e.message);
    throw e;
  }
}

export async function describeLog(ctx: AppContext, name: string) {
  const head = await treeHead(ctx.ledger.read, name);
  const keys = logVerifierKeys(ctx, name);
  return {
    name,
    origin: logOrigin(ctx.config.SITE_URL, name),
    tree_size: head.size,
    root_hash: b64(head.root),
    verifier_key: keys[0]!,
    verifier_keys: keys,
    checkpoint_url: `${ctx.config.SITE_URL}/api/v1/logs/${name}/checkpoint`,
    // The C2SP tlog-tiles prefix: its checkpoint and tiles, readable by any tile client (api/site/tiles.ts).
    ...((TILED_LOGS as readonly string[]).includes(name) ? { tiles_url: tilesUrl(ctx.config.SITE_URL, name) } : {}),
    ...(ctx.witnessPolicy ? { witnessing: await describeWitnessing(ctx, name, head.size) } : {}),
  };
}

/**
 * The log's witnesses (name, vkey, the last size each cosigned and when, its
 * last error) and whether the quorum holds for the latest checkpoint and for
 * the newest witnessed one.
 */
async function describeWitnessing(ctx: AppContext, name: string, size: number) {
  const policy = ctx.witnessPolicy!;
  const latest = await cosignedCheckpoint(ctx, name, size);
  const witnessed = await latestWitnessed(ctx, name);
  // Read after the cosignatures: a cosignature and its witness's state commit together, so a witness
  // named in `cosigned_by` never shows an older `cosigned_size` (a pooled reader has no shared snapshot).
  const states = new Map((await witnessStates(ctx.ledger.read, name)).map((s) => [s.vkey, s]));
  return {
    policy: formatWitnessPolicy(policy),
    quorum: policy.quorum,
    quorum_holds: latest.quorum,
    cosigned_by: latest.cosigners.map((c) => c.name),
    latest_witnessed: witnessed
      ? { tree_size: witnessed.size, cosigned_by: witnessed.cosigners.map((c) => c.name), quorum_holds: witnessed.quorum }
      : null,
    witnesses: policy.witnesses.map((w) => {
      const s = states.get(w.key.vkey);
      return {
        name: w.name,
        vkey: w.key.vkey,
        cosigned_size: s?.cosigned_size ?? null,
        cosigned_at: s?.cosigned_at ?? null,
        ...(s?.last_error ? { last_error: s.last_error, error_at: s.error_at, failures: s.failures } : {}),
      };
    }),
  };
}

export function registerLogRoutes(router: Router, ctx: AppContext): void {
  const db = () => ctx.ledger.read;
  router.job(new Witnessing(ctx));

  operation(
    router,
    ctx,
    { method: 'GET', path: '/api/v1/logs', summary: 'Every append-only log with its size', auth: 'public', tag: 'logs' },
    async () => {
      const logs = await listLogs(db());
      return reply({ logs: await Promise.all(logs.map((l) => describeLog(ctx, l.name))) }, 200, PUBLIC);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/logs/:log',
      summary:
        "A log's head: origin, tree size, root hash, note verifier key, and its witnesses with the size each last cosigned and whether the quorum holds",
      auth: 'public',
      tag: 'logs',
      problems: [404],
    },
    async ({ event }) => {
      const name = logName(event);
      return reply(await guarded(() => describeLog(ctx, name)), 200, PUBLIC);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/logs/:log/checkpoint',
      summary:
        'The latest C2SP signed checkpoint (text/plain note) with the cosignatures witnesses gave it, or the one at an earlier tree size, or the newest one a witness cosigned',
      auth: 'public',
      tag: 'logs',
      query: checkpointQuery,
      problems: [404],
      responses: { 200: { description: 'The signed note (c2sp.org/tlog-checkpoint)', contentType: 'text/plain' } },
    },
    async ({ input: q, event }) => {
      const name = logName(event);
      const witnessed = q.witnessed === 'true' ? await guarded(() => latestWitnessed(ctx, name)) : undefined;
      if (q.witnessed === 'true' && !witnessed) throw notFound(`no witness has cosigned a checkpoint of ${name} yet`, 'not_witnessed');
      const cp = witnessed ?? (await guarded(() => cosignedCheckpoint(ctx, name, q.size)));
      return new HTTPResponse(cp.note, {
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', ...PUBLIC },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/logs/:log/growth',
      summary: 'How the log grew: the append time of evenly spaced entries (for a chart)',
      auth: 'public',
      tag: 'logs',
      query: growthQuery,
      problems: [404],
    },
    async ({ input: q, event }) => {
      const name = logName(event);
      return reply({ log: name, ...(await guarded(() => logGrowth(db(), name, q.points))) }, 200, PUBLIC);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/logs/:log/entries',
      summary: 'Log entries with their exact leaf bytes and decoded fields',
      auth: 'public',
      tag: 'logs',
      query: entriesQuery,
      problems: [404],
    },
    async ({ input: q, event }) => {
      const name = logName(event);
      const entries = await guarded(() => readEntries(db(), name, q.start, q.limit));
      const size = await guarded(() => logSize(db(), name));
      return toResponse(
        reply({
          log: name,
          tree_size: size,
          start: q.start,
          entries: entries.map((e) => ({ index: e.index, leaf: b64(e.leaf), created_at: e.created_at, ...decodeLeaf(name, e.leaf) })),
          ...(q.start + entries.length < size ? { next: q.start + entries.length } : {}),
        }),
        PUBLIC,
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/logs/:log/proof/inclusion',
      summary: 'RFC 9162 inclusion proof of an entry',
      auth: 'public',
      tag: 'logs',
      query: inclusionQuery,
      problems: [404],
    },
    async ({ input: q, event }) => {
      const name = logName(event);
      const proof = await guarded(() => inclusionProof(db(), name, q.index, q.tree_size));
      return toResponse(
        reply({ log: name, index: q.index, tree_size: q.tree_size, leaf_hash: b64(proof.leafHash), hashes: proof.hashes.map(b64) }),
        PUBLIC,
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/logs/:log/proof/consistency',
      summary: 'RFC 9162 consistency proof between two tree sizes',
      auth: 'public',
      tag: 'logs',
      query: consistencyQuery,
      problems: [404],
    },
    async ({ input: q, event }) => {
      const name = logName(event);
      if (q.from > q.to) throw badRequest('out_of_range', 'from must not exceed to');
      const hashes = await guarded(() => consistencyProof(db(), name, q.from, q.to));
      return reply({ log: name, from: q.from, to: q.to, hashes: hashes.map(b64) }, 200, PUBLIC);
    },
  );
}
