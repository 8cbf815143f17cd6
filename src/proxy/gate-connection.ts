/**
 * One HTTP/1.1 connection to the gate, kept alive, one request at a time: the
 * request written whole in one write, its answer read whole, framed as RFC
 * 9112 section 6 frames it (no body for 1xx, 204 and 304; chunked coding;
 * Content-Length; else up to the connection's end). The proxy asks a local
 * gate before every tool call, and `node:http`'s request and response objects
 * were a tenth of its CPU a call (docs/agents-behind-a-fuse.md, "What a
 * proxied call costs"); this is the part of them the proxy needs.
 *
 * Nothing is retried: a connection that fails or ends before its answer is
 * complete fails the request (the proxy then refuses the call, closed). So an
 * idle connection is not used once the gate may be about to close it: past
 * the idle time its `Keep-Alive: timeout` names, less a second (4 s when it
 * names none), as undici does.
 */
import { isIP, connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** An answer as read: its status line's parts, its header lines as [name, value, ...], its body. */
export interface RawAnswer {
  status: number;
  statusText: string;
  rawHeaders: string[];
  body: Buffer;
}

/** Header names and values are written as given: one that could end its line is refused instead. */
const UNSAFE_HEADER = /[\r\n\0]/;

/** How long a connection stays usable when idle: the server's Keep-Alive timeout less this, else the default. */
const KEEP_ALIVE_MARGIN_MS = 1000;
const KEEP_ALIVE_DEFAULT_MS = 4000;

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');

interface Head {
  status: number;
  statusText: string;
  rawHeaders: string[];
  /** How the body ends: after this many bytes, with the chunked coding's last chunk, or with the connection. */
  framing: { length: number } | 'chunked' | 'close';
  keepAlive: boolean;
  /** How long the connection may be used again once idle (ms). */
  idleMs: number;
}

function parseHead(text: string): Head {
  const lines = text.split('\r\n');
  const status = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0]!);
  if (!status) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
  const rawHeaders: string[] = [];
  let length: number | undefined;
  let chunked = false;
  let connection = '';
  let idleMs = KEEP_ALIVE_DEFAULT_MS;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`not a header line: ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    rawHeaders.push(name, value);
    const lower = name.toLowerCase();
    if (lower === 'content-length') {
      if (!/^\d+$/.test(value) || (length !== undefined && length !== Number(value))) throw new Error(`a bad Content-Length: ${value}`);
      length = Number(value);
    } else if (lower === 'transfer-encoding') chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
    else if (lower === 'connection') connection = `${connection},${value.toLowerCase()}`;
    else if (lower === 'keep-alive') {
      const timeout = /(?:^|,)\s*timeout\s*=\s*(\d+)/i.exec(value);
      if (timeout) idleMs = Math.max(0, Number(timeout[1]) * 1000 - KEEP_ALIVE_MARGIN_MS);
    }
  }
  const code = Number(status[2]);
  const http10 = status[1] === '0';
  const framing =
    code < 200 || code === 204 || code === 304 ? { length: 0 } : chunked ? 'chunked' : length !== undefined ? { length } : 'close';
  const keepAlive = framing !== 'close' && !/\bclose\b/.test(connection) && (!http10 || /\bkeep-alive\b/.test(connection));
  return { status: code, statusText: status[3] ?? '', rawHeaders, framing, keepAlive, idleMs };
}

/**
 * The body of a chunked answer in `buf`, when its last chunk (and any
 * trailer) has arrived: the body and the bytes it took; else undefined.
 */
function dechunk(buf: Buffer): { body: Buffer; used: number } | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf(CRLF, at);
    if (eol < 0) return undefined;
    const size = Number.parseInt(buf.toString('latin1', at, eol).split(';')[0]!.trim(), 16);
    if (!Number.isSafeInteger(size) || size < 0) throw new Error('a bad chunk size');
    if (size === 0) {
      // The trailer section, if any, ends with an empty line.
      const end = buf.indexOf(CRLF, eol + 2) === eol + 2 ? eol + 4 : buf.indexOf(HEAD_END, eol + 2) + 4;
      if (end < 4) return undefined;
      return { body: Buffer.concat(parts), used: end };
    }
    if (buf.length < eol + 2 + size + 2) return undefined;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

export class GateConnection {
  readonly #socket: Socket;
  #buf: Buffer = Buffer.alloc(0);
  #head: Head | undefined;
  #waiting: { resolve: (a: RawAnswer) => void; reject: (e: Error) => void; method: string } | undefined;
  #open = true;
  /** When an idle connection stops being usable (Date.now() ms). */
  #idleUntil = Infinity;

  constructor(url: URL) {
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    this.#socket =
      url.protocol === 'https:' ? tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }) }) : tcpConnect({ host, port });
    this.#socket.setNoDelay(true);
    this.#socket.on('data', (chunk: Buffer) => this.#read(chunk));
    this.#socket.on('error', (e) => this.#fail(e));
    this.#socket.on('end', () => this.#ended());
    this.#socket.on('close', () => this.#fail(new Error('the gate closed the connection')));
  }

  /** Idle, open, and not yet past its idle time: a request may be sent on it. */
  get reusable(): boolean {
    return this.#open && this.#waiting === undefined && Date.now() < this.#idleUntil;
  }

  /** Sends one request and resolves with its answer; rejects with the socket's error, or when the connection ends first. */
  send(method: string, url: URL, headers: Record<string, string>, body: string | undefined): Promise<RawAnswer> {
    let request = `${method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
    for (const name in headers) {
      const value = headers[name]!;
      if (UNSAFE_HEADER.test(name) || UNSAFE_HEADER.test(value))
        return Promise.reject(new TypeError(`the header ${JSON.stringify(name)} is not valid`));
      request += `${name}: ${value}\r\n`;
    }
    // A request with no content and no need of any states no length (RFC 9110 8.6).
    request +=
      body === undefined && (method === 'GET' || method === 'HEAD')
        ? '\r\n'
        : `content-length: ${Buffer.byteLength(body ?? '')}\r\n\r\n${body ?? ''}`;
    return new Promise<RawAnswer>((resolve, reject) => {
      this.#waiting = { resolve, reject, method };
      this.#socket.ref();
      this.#socket.write(request);
    });
  }

  /** Closes the connection: a request on it fails with `reason`. */
  destroy(reason: Error): void {
    this.#fail(reason);
  }

  #read(chunk: Buffer): void {
    if (!this.#waiting) return this.#fail(new Error('the gate sent bytes no request asked for'));
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    try {
      for (;;) {
        if (!this.#head) {
          const end = this.#buf.indexOf(HEAD_END);
          if (end < 0) return;
          const head = parseHead(this.#buf.toString('latin1', 0, end));
          this.#buf = this.#buf.subarray(end + 4);
          // An interim answer (100 Continue...) is followed by the final one; no request here asks to switch protocols.
          if (head.status === 101) throw new Error('the gate switched protocols unasked');
          if (head.status < 200) continue;
          // The answer to a HEAD has no body, whatever its length says (RFC 9110 9.3.2).
          this.#head = this.#waiting.method === 'HEAD' ? { ...head, framing: { length: 0 } } : head;
        }
        const framing = this.#head.framing;
        if (framing === 'close') return; // the body ends with the connection (#ended)
        const done =
          framing === 'chunked'
            ? dechunk(this.#buf)
            : this.#buf.length >= framing.length
              ? { body: this.#buf.subarray(0, framing.length), used: framing.length }
              : undefined;
        if (!done) return;
        this.#buf = this.#buf.subarray(done.used);
        return this.#answer(done.body);
      }
    } catch (e) {
      this.#fail(e as Error);
    }
  }

  #answer(body: Buffer): void {
    const head = this.#head!;
    const waiting = this.#waiting;
    this.#head = undefined;
    this.#waiting = undefined;
    if (head.keepAlive && head.idleMs > 0 && this.#buf.length === 0) {
      this.#idleUntil = Date.now() + head.idleMs;
      this.#socket.unref();
    } else this.#fail(new Error('the connection is not kept'));
    waiting?.resolve({ status: head.status, statusText: head.statusText, rawHeaders: head.rawHeaders, body });
  }

  #ended(): void {
    if (this.#head?.framing === 'close') return this.#answer(this.#buf);
    this.#fail(new Error('the gate closed the connection before it answered'));
  }

  #fail(e: Error): void {
    this.#open = false;
    this.#socket.destroy();
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.reject(e);
  }
}
