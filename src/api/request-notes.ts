/**
 * What the doors of a request learn of it, for the request log
 * (api/request-log.ts): the key once authenticated (revoked and expired keys
 * too), the problem code of a refusal, the receipt an act wrote. Noted on the
 * Node request the log watches, and handed to the log once its answer has been
 * sent.
 *
 * The notes are a property of the request, and one subscriber to Node's
 * `http.server.response.finish` channel hands them over: a watched request
 * costs one small object, no listener of its own and no weak-map entry, and a
 * request nobody watches costs its doors nothing.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { H3Event, HTTPResponse } from 'h3';
import type { ApiKey } from '../ledger/api-keys.ts';
import { toResponse, type Reply } from './reply.ts';

/** Where a watched request's notes go once its answer is sent. */
export interface NotesReader {
  answered(res: ServerResponse, notes: RequestNotes): void;
}

export interface RequestNotes {
  readonly reader: NotesReader;
  /** When the request arrived (performance.now()). */
  readonly arrived: number;
  key: ApiKey | undefined;
  code: string | undefined;
  receiptId: string | undefined;
}

const NOTES = Symbol('request notes');
type Watched = IncomingMessage & { [NOTES]?: RequestNotes };

function onResponseFinish(message: unknown): void {
  const { request, response } = message as { request: Watched; response: ServerResponse };
  const notes = request[NOTES];
  if (notes) notes.reader.answered(response, notes);
}

let subscribed = false;

/** Starts the notes of a request that arrived at `arrived` (performance.now()); `reader` gets them once it is answered. */
export function watchRequest(req: IncomingMessage, reader: NotesReader, arrived: number): void {
  if (!subscribed) {
    subscribe('http.server.response.finish', onResponseFinish);
    subscribed = true;
  }
  (req as Watched)[NOTES] = { reader, arrived, key: undefined, code: undefined, receiptId: undefined };
}

const notesOf = (req: IncomingMessage | undefined): RequestNotes | undefined => (req as Watched | undefined)?.[NOTES];

/** Notes the key that made a watched request (a no-op on any other, or without a Node request). */
export function noteKey(req: IncomingMessage | undefined, key: ApiKey): void {
  const n = notesOf(req);
  if (n) n.key = key;
}

/** Notes the problem code a watched request was answered with. */
export function noteCode(req: IncomingMessage | undefined, code: string): void {
  const n = notesOf(req);
  if (n) n.code = code;
}

/** Notes the receipt a watched request's act wrote. */
export function noteReceiptId(req: IncomingMessage | undefined, receiptId: string): void {
  const n = notesOf(req);
  if (n) n.receiptId = receiptId;
}

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
  if (receiptId) noteReceiptId(nodeRequestOf(event), receiptId);
}

/** A keyed act's answer, its receipt noted. */
export function actResponse(event: H3Event, r: Reply): HTTPResponse {
  noteReceipt(event, r);
  return toResponse(r);
}
