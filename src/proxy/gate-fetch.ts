/**
 * The proxy's way to the gate: `fetch`'s contract, kept to what the typed
 * client uses (method, headers, a string body, a signal; the answer read
 * whole, as the client's `FetchAnswer`), over `node:http` with one kept-alive
 * connection per concurrent call. Measured beside the global `fetch` (undici)
 * on the proxied call, it cut the proxy's CPU a call by about a fifth; and
 * answering with a plain object rather than a `Response` (whose headers,
 * body stream and WebIDL checks a lone call pays for cold) cut it by about a
 * fifth again (docs/agents-behind-a-fuse.md, "What a proxied call costs").
 * The guards keep the global `fetch`: they run wherever an agent runs, not
 * only on Node.
 *
 * It fails as `fetch` fails, so that a refusal reads the same: a signal that
 * fires rejects with its reason (a timeout), and a gate that cannot be
 * reached rejects with `TypeError('fetch failed')` whose cause is the socket's
 * error. A redirect is answered as it comes, not followed (the gate sends
 * none on the calls the proxy makes; a 3xx is then refused, closed).
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Fetch, FetchAnswer } from '../client.ts';

/** UTF-8, a leading byte order mark dropped: as a Response's text() decodes. */
const utf8 = new TextDecoder();

/** An answer read whole: its status, its headers as they came (a name repeated: its values joined, as Headers does) and its bytes. */
class GateAnswer implements FetchAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly #raw: string[];
  readonly #bytes: Buffer;

  constructor(status: number, statusText: string, raw: string[], bytes: Buffer) {
    this.status = status;
    this.statusText = statusText;
    this.#raw = raw;
    this.#bytes = bytes;
  }

  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }

  get headers(): FetchAnswer['headers'] {
    const raw = this.#raw;
    return {
      get(name: string): string | null {
        const wanted = name.toLowerCase();
        let value: string | null = null;
        for (let i = 0; i < raw.length; i += 2)
          if (raw[i]!.toLowerCase() === wanted) value = value === null ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
        return value;
      },
    };
  }

  async text(): Promise<string> {
    return utf8.decode(this.#bytes);
  }

  async json(): Promise<unknown> {
    return JSON.parse(utf8.decode(this.#bytes));
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return new Uint8Array(this.#bytes).buffer;
  }
}

/** A `fetch` on agents of its own: its connections live as long as it does, idle ones never holding the process open. */
export function keptAliveFetch(): Fetch {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  return (input: string, init: RequestInit) =>
    new Promise<FetchAnswer>((resolve, reject) => {
      const signal = init.signal ?? undefined;
      if (signal?.aborted) return reject(signal.reason);
      const url = new URL(input);
      const https = url.protocol === 'https:';
      const failed = (e: Error) => reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: e }));
      const req = (https ? httpsRequest : httpRequest)(
        url,
        {
          method: init.method ?? 'GET',
          headers: init.headers as Record<string, string> | undefined,
          agent: https ? agents.https : agents.http,
          signal,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', failed);
          res.on('end', () =>
            resolve(
              new GateAnswer(
                res.statusCode ?? 0,
                res.statusMessage ?? '',
                res.rawHeaders,
                chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
              ),
            ),
          );
        },
      );
      req.on('error', failed);
      req.end(typeof init.body === 'string' ? init.body : undefined);
    });
}
