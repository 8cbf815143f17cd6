/**
 * The proxy's way to the gate: `fetch`'s contract, kept to what the typed
 * client uses (method, headers, a string body, a signal; the answer read
 * whole, as the client's `FetchAnswer`), over kept-alive HTTP/1.1
 * connections of its own (./gate-connection.ts), one per concurrent call.
 * Measured on the proxied call, side by side: `node:http` instead of the
 * global `fetch` (undici) cut the proxy's CPU a call by about a fifth; a
 * plain answer instead of a `Response` (whose headers, body stream and WebIDL
 * checks a lone call pays for cold) by a tenth to a fifth more; these
 * connections instead of `node:http` by a tenth to a seventh more
 * (docs/agents-behind-a-fuse.md, "What a proxied call costs"). The guards
 * keep the global `fetch`: they run wherever an agent runs, not only on Node.
 *
 * It fails as `fetch` fails, so that a refusal reads the same: a signal that
 * fires rejects with its reason (a timeout), and a gate that cannot be
 * reached rejects with `TypeError('fetch failed')` whose cause is the socket's
 * error. A redirect is answered as it comes, not followed (the gate sends
 * none on the calls the proxy makes; a 3xx is then refused, closed).
 */
import type { Fetch, FetchAnswer } from '../client.ts';
import { GateConnection, type RawAnswer } from './gate-connection.ts';

/** UTF-8, a leading byte order mark dropped: as a Response's text() decodes. */
const utf8 = new TextDecoder();

/** An answer read whole: its status, its headers as they came (a name repeated: its values joined, as Headers does) and its bytes. */
class GateAnswer implements FetchAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly #raw: string[];
  readonly #bytes: Buffer;

  constructor(answer: RawAnswer) {
    this.status = answer.status;
    this.statusText = answer.statusText;
    this.#raw = answer.rawHeaders;
    this.#bytes = answer.body;
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

/** A `fetch` with connections of its own: they live as long as it does, idle ones never holding the process open. */
export function keptAliveFetch(): Fetch {
  const idle = new Map<string, GateConnection[]>();
  return async (input: string, init: RequestInit) => {
    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    const url = new URL(input);
    const kept = idle.get(url.origin) ?? [];
    idle.set(url.origin, kept);
    let conn = kept.pop();
    while (conn && !conn.reusable) {
      conn.destroy(new Error('the connection was idle too long'));
      conn = kept.pop();
    }
    conn ??= new GateConnection(url);
    const connection = conn;
    const abort = () => connection.destroy(signal!.reason as Error);
    signal?.addEventListener('abort', abort, { once: true });
    try {
      const answer = await connection.send(
        init.method ?? 'GET',
        url,
        (init.headers ?? {}) as Record<string, string>,
        typeof init.body === 'string' ? init.body : undefined,
      );
      if (connection.reusable) kept.push(connection);
      return new GateAnswer(answer);
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if (e instanceof TypeError) throw e;
      throw new TypeError('fetch failed', { cause: e });
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  };
}
