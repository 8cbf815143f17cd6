/**
 * What the doors of a request learn of it, for the request log
 * (api/request-log.ts): the key once authenticated (revoked and expired keys
 * too), the problem code of a refusal, the receipt an act wrote. Noted on the
 * Node request, read when its answer has been sent.
 */
import type { IncomingMessage } from 'node:http';
import type { H3Event, HTTPResponse } from 'h3';
import type { ApiKey } from '../ledger/api-keys.ts';
import { toResponse, type Reply } from './reply.ts';

export interface RequestNotes {
  /** When the request arrived (performance.now()), noted first when the request log watches it. */
  arrived?: number;
  key?: ApiKey;
  code?: string;
  receiptId?: string;
}

const notes = new WeakMap<IncomingMessage, RequestNotes>();

/** Notes facts of request `req` (a no-op without one: an answer made off a Node request). */
export function noteRequest(req: IncomingMessage | undefined, facts: RequestNotes): void {
  if (!req) return;
  const n = notes.get(req);
  if (n) Object.assign(n, facts);
  else notes.set(req, { ...facts });
}

/** Starts the notes of a request that arrived at `arrived` (performance.now()): the first fact noted of it. */
export function openNotes(req: IncomingMessage, arrived: number): void {
  notes.set(req, { arrived });
}

export const notesOf = (req: IncomingMessage): RequestNotes | undefined => notes.get(req);

/** The Node request behind an h3 event, when there is one. */
export const nodeRequestOf = (event: H3Event): IncomingMessage | undefined => event.runtime?.node?.req as IncomingMessage | undefined;

/** The receipt an act's answer names, if any. */
export function receiptOfBody(body: unknown): string | undefined {
  const id = body !== null && typeof body === 'object' ? (body as { receipt_id?: unknown }).receipt_id : undefined;
  return typeof id === 'string' ? id : undefined;
}

/** Notes the receipt an act's answer names. */
export function noteReceipt(event: H3Event, r: Reply): void {
  const receiptId = receiptOfBody(r.body);
  if (receiptId) noteRequest(nodeRequestOf(event), { receiptId });
}

/** A keyed act's answer, its receipt noted. */
export function actResponse(event: H3Event, r: Reply): HTTPResponse {
  noteReceipt(event, r);
  return toResponse(r);
}
