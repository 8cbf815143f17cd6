/**
 * Request bodies and query strings, validated by zod schemas. Every failure is
 * a 4xx problem that names the field; nothing is read past the size limit.
 */
import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';
import type { z } from 'zod';
import { jsonBoundsProblem } from './json-bounds.ts';
import { Problem, badRequest } from './problem.ts';

declare module 'h3' {
  interface H3EventContext {
    /** The JSON body, read once per request (readJsonValue). */
    parsedBody?: ParsedBody;
  }
}

export interface FieldError {
  field: string;
  message: string;
}

export function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((i) => ({ field: i.path.length ? i.path.join('.') : '(body)', message: i.message }));
}

function invalid(where: 'body' | 'query', error: z.ZodError): Problem {
  const errors = fieldErrors(error);
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return badRequest(where === 'body' ? 'invalid_body' : 'invalid_query', detail, { errors });
}

/** A Content-Type this API reads as JSON (application/json or application/*+json). */
export function isJsonType(contentType: string | null | undefined): boolean {
  if (!contentType) return false;
  const mime = contentType.split(';')[0]!.trim().toLowerCase();
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

/**
 * 413: the body passed `limit` bytes. The connection is closed after the
 * answer (RFC 9110 15.5.14): the rest of the body is never read, and keeping
 * the connection would mean draining an upload of any size first.
 */
export const bodyTooLarge = (limit: number): Problem =>
  new Problem({
    status: 413,
    code: 'body_too_large',
    title: 'Content too large',
    detail: `request bodies are limited to ${limit} bytes`,
    headers: { connection: 'close' },
    extra: { limit_bytes: limit },
  });

/** Reads the raw body bytes, refusing (413) past `limit` whatever Content-Length claims. */
export async function readRawBody(event: H3Event, limit: number): Promise<Uint8Array> {
  const tooLarge = () => bodyTooLarge(limit);
  const declared = Number(event.req.headers.get('content-length') ?? '0');
  if (declared > limit) throw tooLarge();
  // On Node, read the request itself: h3's `req.body` would wrap it in a web stream first.
  const node = (event.req as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
  const stream = node ? undefined : event.req.body;
  if (!node && !stream) return new Uint8Array();
  const bytes = node ? await readNodeWithin(node, limit) : await readStreamWithin(stream!, limit);
  if (!bytes) throw tooLarge();
  return bytes;
}

/** Reads a Node request body whole; undefined (and the rest left unread) as soon as it passes `limit` bytes. */
export function readNodeWithin(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  if (req.readableEnded) return Promise.resolve(new Uint8Array());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (out: Uint8Array | undefined) => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
      resolve(out);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        done(undefined);
      } else chunks.push(chunk);
    };
    const onEnd = () => done(Buffer.concat(chunks, size));
    const onError = (e: Error) => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
      reject(e);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/** Reads a body stream whole; undefined (and the stream cancelled) as soon as it passes `limit` bytes. */
export async function readStreamWithin(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** Cached per event: the raw JSON text (idempotency hashes it) and its parsed value. */
interface ParsedBody {
  text: string;
  value: unknown;
}

export async function readJsonValue(event: H3Event, limit: number): Promise<ParsedBody> {
  const cached = event.context.parsedBody;
  if (cached) return cached;
  if (!isJsonType(event.req.headers.get('content-type'))) throw unsupportedMediaType();
  const parsed = parseJsonBody(await readRawBody(event, limit));
  event.context.parsedBody = parsed;
  return parsed;
}

const unsupportedMediaType = () =>
  new Problem({
    status: 415,
    code: 'unsupported_media_type',
    title: 'Unsupported media type',
    detail: 'send the body as application/json',
  });

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The body's JSON value, or the 400 that names what is wrong with its bytes. */
export function parseJsonBody(bytes: Uint8Array): ParsedBody {
  // RFC 8259 8.1: JSON text is UTF-8. Invalid bytes are refused, not replaced with U+FFFD (which
  // would store and sign text the caller never sent).
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw badRequest('invalid_utf8', 'the body is not valid UTF-8 (JSON text must be UTF-8, RFC 8259 8.1)');
  }
  if (text.trim() === '') throw badRequest('empty_body', 'a JSON body is required');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw badRequest('malformed_json', `the body is not valid JSON: ${(e as Error).message}`);
  }
  const outOfBounds = jsonBoundsProblem(value);
  if (outOfBounds) throw outOfBounds;
  return { text, value };
}

/** Reads a JSON body and validates it with `schema`. */
export async function readBody<S extends z.ZodType>(event: H3Event, schema: S, limit: number): Promise<z.output<S>> {
  return validBody(schema, (await readJsonValue(event, limit)).value);
}

/** The body's value as `schema` reads it, or the 400 that names each field wrong. */
export function validBody<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw invalid('body', result.error);
  return result.data;
}

/** Validates the query string with `schema` (values arrive as strings). */
export function readQuery<S extends z.ZodType>(event: H3Event, schema: S): z.output<S> {
  return validQuery(schema, event.url.searchParams);
}

/** A query string's values as `schema` reads them, or the 400 that names each field wrong (an API call's, a dashboard page's). */
export function validQuery<S extends z.ZodType>(schema: S, params: URLSearchParams): z.output<S> {
  const result = schema.safeParse(Object.fromEntries(params));
  if (!result.success) throw invalid('query', result.error);
  return result.data;
}

/**
 * How an operation reads the input it declares (api/operation.ts): a GET its
 * query, anything else its body, at most `limit` bytes; nothing without a
 * schema; with `optionalBody`, a request without a Content-Type as `{}` (the
 * schema's defaults), as when no body was sent.
 */
export function inputReader<S extends z.ZodType>(
  method: string,
  schema: S | undefined,
  limit: number,
  optionalBody = false,
): (event: H3Event) => z.output<S> | Promise<z.output<S>> {
  if (!schema) return () => undefined as z.output<S>;
  if (method === 'GET') return (event) => readQuery(event, schema);
  if (optionalBody)
    return (event) => (event.req.headers.get('content-type') === null ? (schema.parse({}) as z.output<S>) : readBody(event, schema, limit));
  return (event) => readBody(event, schema, limit);
}
