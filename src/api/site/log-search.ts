/**
 * Finding an entry of a public log (issue 31), as Rekor's search does:
 *   GET /api/v1/logs/{log}/search?q=…[&by=index|receipt_id|leaf_hash|fuse_id|key_id|decision|time]
 * `q` is read as an entry index (digits), a receipt id or its start (rcpt_…), a
 * leaf hash (64 hex digits or 44 base64 characters, RFC 9162 SHA-256(0x00 ||
 * leaf)), a key id (key_…), a decision word (PERMIT, DENY… in any case), a time
 * (a UTC day or the start of an RFC 3339 instant: entries appended then) or a
 * fuse id (any other id); `by` forces one reading. An index, and a whole
 * receipt id in the receipts log, are looked up directly; the rest are matched
 * against the newest LOG_SEARCH_SCAN entries, newest first, and the answer says
 * which range it covered. Reads only through the log and receipt functions of
 * the ledger.
 */
import { z } from 'zod';
import { leafHash } from '../../crypto/merkle.ts';
import { LogRangeError, UnknownLogError, logSize, readEntries, type LogEntry } from '../../ledger/log.ts';
import { RECEIPTS_LOG, getReceipt } from '../../ledger/receipts.ts';
import type { AppContext } from '../context.ts';
import { badRequest, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { decodeLeaf } from './leaf-decoders.ts';
import { base64 as b64 } from '../../crypto/base64.ts';
import { RECEIPT_DECISIONS } from '../../domain/receipt-words.ts';
import { operation } from '../operation.ts';

/** How many of the newest entries a search reads that is not an index or a whole receipt id. */
export const LOG_SEARCH_SCAN = 20_000;
const PAGE = 1000;
const MAX_MATCHES = 50;

const BY = ['index', 'receipt_id', 'leaf_hash', 'fuse_id', 'key_id', 'decision', 'time'] as const;
type By = (typeof BY)[number];

export const searchQuery = z.object({
  q: z
    .string()
    .trim()
    .min(1, 'q is empty: send a receipt id, an entry index, a leaf hash, a fuse id, a key id, a decision or a time')
    .max(200),
  by: z.enum(BY).optional().describe('how to read q; by default from its form'),
});

const entry = z.object({ index: z.number(), leaf: z.string(), leaf_hash: z.string(), created_at: z.string() }).loose();
export const searchResponse = z.object({
  log: z.string(),
  q: z.string(),
  by: z.enum(BY),
  tree_size: z.number(),
  entries: z.array(entry).describe('matches, newest first (at most 50)'),
  searched: z.object({ from: z.number(), to: z.number() }).describe('the index range read: [from, to)'),
  complete: z.boolean().describe('false when older entries than `searched.from` were not read'),
});

const HEX = /^[0-9a-fA-F]{64}$/;
const BASE64 = /^[A-Za-z0-9+/]{43}=$/;

const TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}(:\d{2}(:\d{2}(\.\d{1,3})?)?)?Z?)?$/;

/** How `q` reads when `by` is not given. */
export function readingOf(q: string): By | undefined {
  if (/^\d{1,15}$/.test(q)) return 'index';
  if (/^rcpt_[A-Za-z0-9_-]{1,100}$/.test(q)) return 'receipt_id';
  if (HEX.test(q) || BASE64.test(q)) return 'leaf_hash';
  if (/^key_[A-Za-z0-9_-]{1,60}$/.test(q)) return 'key_id';
  if (RECEIPT_DECISIONS.includes(q.toUpperCase())) return 'decision';
  if (TIME.test(q)) return 'time';
  if (/^[A-Za-z0-9_-]{1,64}$/.test(q)) return 'fuse_id';
  return undefined;
}

function leafHashBytes(q: string): Buffer {
  if (HEX.test(q)) return Buffer.from(q, 'hex');
  if (BASE64.test(q)) return Buffer.from(q, 'base64');
  throw badRequest('invalid_query', 'a leaf hash is 64 hex digits or 44 base64 characters (SHA-256 of 0x00 followed by the leaf bytes)');
}

/** The fields of an entry that name a fuse, a receipt, a key and a decision. */
function named(log: string, e: LogEntry): { fuse?: unknown; receipt?: unknown; key?: unknown; decision?: unknown } {
  const d = decodeLeaf(log, e.leaf) as { payload?: Record<string, unknown>; value?: Record<string, unknown> };
  const v = (d.payload ?? d.value ?? {}) as Record<string, unknown>;
  const data = (v.data ?? {}) as Record<string, unknown>;
  return {
    fuse: v.fuse_id ?? data.fuse_id ?? (log === RECEIPTS_LOG ? v.subject : undefined),
    receipt: v.receipt_id ?? data.receipt_id,
    key: v.key_id ?? data.key_id,
    decision: v.decision,
  };
}

/** Whether entry `e` is what `q` asks for, read as `by` (not an index or a leaf hash). */
function matchesNamed(log: string, e: LogEntry, q: string, by: By): boolean {
  if (by === 'time') return e.created_at.startsWith(q.replace(/Z$/, ''));
  const n = named(log, e);
  if (by === 'fuse_id') return n.fuse === q;
  if (by === 'key_id') return n.key === q;
  if (by === 'decision') return typeof n.decision === 'string' && n.decision.toUpperCase() === q.toUpperCase();
  // A receipt id, or its start.
  return typeof n.receipt === 'string' && n.receipt.startsWith(q);
}

const view = (log: string, e: LogEntry) => ({
  index: e.index,
  leaf: b64(e.leaf),
  leaf_hash: b64(leafHash(e.leaf)),
  created_at: e.created_at,
  ...decodeLeaf(log, e.leaf),
});

export async function searchLog(ctx: AppContext, log: string, q: string, by: By) {
  const db = ctx.ledger.read;
  const size = await logSize(db, log);
  const whole = { from: 0, to: size };
  if (by === 'index') {
    if (!/^\d{1,15}$/.test(q)) throw badRequest('invalid_query', `an entry index is a whole number from 0 to ${Math.max(0, size - 1)}`);
    const i = Number(q);
    const found = i < size ? await readEntries(db, log, i, 1) : [];
    return { entries: found.map((e) => view(log, e)), searched: whole, complete: true };
  }
  if (by === 'receipt_id' && log === RECEIPTS_LOG) {
    const r = await getReceipt(db, q);
    if (r) return { entries: (await readEntries(db, log, r.log_index, 1)).map((e) => view(log, e)), searched: whole, complete: true };
    // The start of an id that names its index (rcpt_<index>_…): that one entry, if its id starts so.
    const at = /^rcpt_(\d{1,15})_/.exec(q);
    if (at) {
      const i = Number(at[1]);
      const found = i < size ? (await readEntries(db, log, i, 1)).filter((e) => matchesNamed(log, e, q, by)) : [];
      return { entries: found.map((e) => view(log, e)), searched: whole, complete: true };
    }
  }
  const target = by === 'leaf_hash' ? leafHashBytes(q) : undefined;
  const matches = (e: LogEntry) => (target ? target.equals(leafHash(e.leaf)) : matchesNamed(log, e, q, by));
  const from = Math.max(0, size - LOG_SEARCH_SCAN);
  const found: LogEntry[] = [];
  for (let end = size; end > from && found.length < MAX_MATCHES; end -= PAGE) {
    const start = Math.max(from, end - PAGE);
    const page = await readEntries(db, log, start, end - start);
    for (const e of page.reverse()) if (found.length < MAX_MATCHES && matches(e)) found.push(e);
  }
  return { entries: found.map((e) => view(log, e)), searched: { from, to: size }, complete: from === 0 };
}

export function registerLogSearchRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/logs/:log/search',
      summary: `Find entries of a log by receipt id (or its start), entry index, leaf hash, fuse id, key id, decision or time (all but an index and a whole receipt id are matched in the newest ${LOG_SEARCH_SCAN.toLocaleString('en-US')} entries)`,
      auth: 'public',
      tag: 'logs',
      query: searchQuery,
      response: searchResponse,
      problems: [404],
    },
    async ({ input, params }) => {
      const log = String(params.log ?? '');
      if (!/^[a-z0-9_-]{1,64}$/.test(log)) throw notFound(`no log named ${log}`, 'unknown_log');
      const { q, by: forced } = input;
      const by = forced ?? readingOf(q);
      if (!by)
        throw badRequest(
          'invalid_query',
          'q is not a receipt id (rcpt_…) or its start, an entry index, a leaf hash (hex or base64), a fuse id, a key id (key_…), a decision word or a time (2026-11-28 or 2026-11-28T08:15)',
        );
      try {
        const found = await searchLog(ctx, log, q, by);
        return reply({ log, q, by, tree_size: found.searched.to, ...found }, 200, { 'access-control-allow-origin': '*' });
      } catch (e) {
        if (e instanceof UnknownLogError) throw notFound(e.message, 'unknown_log');
        if (e instanceof LogRangeError) throw badRequest('out_of_range', e.message);
        throw e;
      }
    },
  );
}
