/**
 * What an act reads of its request: its typed context (the calling key, the
 * request id, an open Idempotency-Key reservation, an x402 call; each field is
 * declared by the module that owns it, as an augmentation of h3's
 * H3EventContext) and its headers. An h3 event is one; the act lane
 * (api/lane.ts) builds one from the Node request, so that an act reads the
 * same on both doors.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { H3EventContext } from 'h3';

export interface ActEvent {
  readonly context: H3EventContext;
  readonly req: { readonly headers: Pick<Headers, 'get'> };
}

/** The Headers view of a Node request's headers, as the Fetch API reads them (repeated values joined). */
export function headersOf(headers: IncomingHttpHeaders): Pick<Headers, 'get'> {
  return {
    get(name: string): string | null {
      const value = headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}
