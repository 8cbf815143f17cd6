/**
 * The proxy's way to the gate (src/proxy/gate-fetch.ts) against a real HTTP
 * server on loopback: it answers and fails as the global fetch does, side by
 * side, so that the typed client and the proxy's refusals read the same; and
 * it keeps its connection between calls without holding the process open.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FetchAnswer } from '../src/client.ts';
import { keptAliveFetch } from '../src/proxy/gate-fetch.ts';
import { freePort } from './support/ports.ts';

let server: Server;
let base: string;
let connections = 0;
const seen: Array<{ method: string; url: string; type: string | undefined; body: string }> = [];

function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
  seen.push({ method: req.method!, url: req.url!, type: req.headers['content-type'], body });
  if (req.url === '/silent') return; // takes the request and never answers
  if (req.url === '/empty') return void res.writeHead(204).end();
  if (req.url === '/bom') {
    res.writeHead(200, 'Fine', { 'content-type': 'application/json; charset=utf-8' });
    return void res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"é":"ü"}')]));
  }
  if (req.url === '/problem') {
    res.writeHead(404, { 'content-type': 'application/problem+json' });
    return void res.end(JSON.stringify({ code: 'unknown_fuse', status: 404 }));
  }
  res.writeHead(200, [
    ['content-type', 'application/json'],
    ['x-several', 'a'],
    ['x-several', 'b'],
  ]);
  res.end(JSON.stringify({ verdict: true, got: body }));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => answer(req, res, body));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

/** What a caller reads of an answer, whichever fetch made it. */
async function read(res: FetchAnswer) {
  return {
    status: res.status,
    ok: res.ok,
    type: res.headers.get('content-type'),
    several: res.headers.get('X-Several'),
    text: await res.text(),
  };
}

/** Each way the typed client reads an answer, each on an answer of its own. */
async function readEveryWay(get: () => Promise<FetchAnswer>) {
  const [a, b, c] = [await get(), await get(), await get()];
  return {
    status: a.status,
    statusText: a.statusText,
    ok: a.ok,
    missing: a.headers.get('x-none'),
    text: await a.text(),
    json: await b.json().catch((e: Error) => e.name),
    bytes: [...new Uint8Array(await c.arrayBuffer())],
  };
}

describe('keptAliveFetch', () => {
  const kept = keptAliveFetch();

  it('sends and answers as the global fetch does', async () => {
    const init = { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: '{"fuse_id":"f"}' };
    const mine = await read(await kept(`${base}/v1/fuse/hop`, init));
    const theirs = await read(await fetch(`${base}/v1/fuse/hop`, init));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual({
      status: 200,
      ok: true,
      type: 'application/json',
      several: 'a, b',
      text: JSON.stringify({ verdict: true, got: '{"fuse_id":"f"}' }),
    });
    expect(seen.slice(-2)).toEqual([
      { method: 'POST', url: '/v1/fuse/hop', type: 'application/json', body: '{"fuse_id":"f"}' },
      { method: 'POST', url: '/v1/fuse/hop', type: 'application/json', body: '{"fuse_id":"f"}' },
    ]);
    expect(await read(await kept(`${base}/problem`, {}))).toEqual(await read(await fetch(`${base}/problem`)));
    const empty = await kept(`${base}/empty`, { method: 'DELETE' });
    expect(await read(empty)).toEqual(await read(await fetch(`${base}/empty`, { method: 'DELETE' })));
    expect(await read(empty)).toMatchObject({ status: 204, ok: true, text: '' });
  });

  it('reads an answer as text, JSON and bytes as a Response does', async () => {
    for (const path of ['/v1/fuse/hop', '/problem', '/empty', '/bom']) {
      const mine = await readEveryWay(() => kept(`${base}${path}`, { method: 'POST', body: '{}' }));
      expect(mine).toEqual(await readEveryWay(() => fetch(`${base}${path}`, { method: 'POST', body: '{}' })));
    }
    // A byte order mark is dropped from the text and the JSON, kept in the bytes.
    const bom = await readEveryWay(() => kept(`${base}/bom`, {}));
    expect(bom).toMatchObject({ statusText: 'Fine', text: '{"é":"ü"}', json: { é: 'ü' } });
    expect(bom.bytes.slice(0, 3)).toEqual([0xef, 0xbb, 0xbf]);
    expect((await readEveryWay(() => kept(`${base}/empty`, {}))).json).toBe('SyntaxError');
  });

  it('keeps one connection for calls made one after another', async () => {
    const fresh = keptAliveFetch();
    const before = connections;
    for (let i = 0; i < 5; i++) expect((await fresh(`${base}/x`, { method: 'POST', body: String(i) })).status).toBe(200);
    expect(connections - before).toBe(1);
    // Calls in flight together each take a connection of their own.
    await Promise.all([fresh(`${base}/a`, {}), fresh(`${base}/b`, {}), fresh(`${base}/c`, {})].map(async (p) => (await p).text()));
    expect(connections - before).toBe(3);
  });

  it('takes a new connection once the server has closed its idle one', async () => {
    // A gate that closes idle connections at once: the next call must not be sent on the closed one.
    const closing = createServer((req, res) =>
      req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')),
    );
    closing.keepAliveTimeout = 1;
    const closed: Array<Promise<void>> = [];
    closing.on('connection', (socket) => closed.push(new Promise((r) => socket.once('close', () => r()))));
    await new Promise<void>((r) => closing.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(closing.address() as AddressInfo).port}/v1/fuse/hop`;
    try {
      const fresh = keptAliveFetch();
      for (let i = 0; i < 3; i++) {
        expect(await (await fresh(url, { method: 'POST', body: '{}' })).json()).toEqual({ ok: true });
        await closed[i]; // the server has closed the connection that call used
      }
      expect(closed).toHaveLength(3);
    } finally {
      await new Promise<void>((r) => closing.close(() => r()));
    }
  });

  it('rejects as fetch does when its signal fires: with the signal reason', async () => {
    const mine = await kept(`${base}/silent`, { signal: AbortSignal.timeout(50) }).catch((e: unknown) => e);
    const theirs = await fetch(`${base}/silent`, { signal: AbortSignal.timeout(50) }).catch((e: unknown) => e);
    expect(mine).toBeInstanceOf(DOMException);
    expect((mine as DOMException).name).toBe('TimeoutError');
    expect((mine as DOMException).message).toBe((theirs as DOMException).message);
    const aborted = new AbortController();
    aborted.abort(new Error('stopped'));
    await expect(kept(`${base}/x`, { signal: aborted.signal })).rejects.toThrow('stopped');
  });

  it('rejects as fetch does when nothing listens: fetch failed, the socket error as its cause', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/v1/fuse/hop`;
    const mine = (await kept(closed, { method: 'POST', body: '{}' }).catch((e: unknown) => e)) as TypeError & {
      cause: NodeJS.ErrnoException;
    };
    const theirs = (await fetch(closed, { method: 'POST', body: '{}' }).catch((e: unknown) => e)) as TypeError & {
      cause: NodeJS.ErrnoException;
    };
    expect(mine).toBeInstanceOf(TypeError);
    expect(mine.message).toBe(theirs.message);
    expect(mine.cause.code).toBe('ECONNREFUSED');
    expect(mine.cause.code).toBe(theirs.cause.code);
  });

  it('does not hold the process open with an idle connection', async () => {
    // A process that makes one call and has nothing else to do ends, its kept connection still open at the server.
    const script = `import { keptAliveFetch } from ${JSON.stringify(join(process.cwd(), 'src/proxy/gate-fetch.ts'))};
      const res = await keptAliveFetch()(${JSON.stringify(`${base}/x`)}, { method: 'POST', body: 'bye' });
      console.log(res.status);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: '200' });
  });

  describe('answers framed as HTTP/1.1 frames them', () => {
    /** A server that writes each answer as given, byte for byte, in pieces; `requests` are the raw requests it read. */
    async function rawServer(answer: (request: string) => string[]) {
      const requests: string[] = [];
      const sockets = new Set<Socket>();
      const tcp = createTcpServer((socket) => {
        sockets.add(socket);
        let buf = '';
        socket.on('data', (d) => {
          buf += d.toString('latin1');
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          const length = Number(/content-length: (\d+)/i.exec(buf)?.[1] ?? 0);
          if (buf.length < end + 4 + length) return;
          const request = buf.slice(0, end + 4 + length);
          buf = buf.slice(request.length);
          requests.push(request);
          const pieces = answer(request);
          // Each piece in its own write, a turn apart: the reader must put them together.
          const next = () => {
            const piece = pieces.shift();
            if (piece === undefined) return;
            if (piece === 'END') return void socket.end();
            socket.write(Buffer.from(piece, 'latin1'), () => setImmediate(next));
          };
          next();
        });
      });
      await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
      const url = `http://127.0.0.1:${(tcp.address() as AddressInfo).port}`;
      const close = async () => {
        for (const s of sockets) s.destroy();
        await new Promise<void>((r) => tcp.close(() => r()));
      };
      return { url, requests, close };
    }

    it('reads a Content-Length body, a chunked one (with extensions and trailers) and one that ends with the connection, as fetch does', async () => {
      const answers: Record<string, string[]> = {
        '/length': ['HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Le', 'ngth: 10\r\n\r\n{"a":', '"bc"}'],
        '/chunked': [
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n',
          '5;ext=1\r\n{"a":\r\n',
          '6\r\n"bc"}\n\r',
          '\n0\r\nx-trailer: t\r\n\r\n',
        ],
        '/to-the-end': ['HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of ', 'it', 'END'],
        '/no-content': ['HTTP/1.1 204 No Content\r\nx-a: 1\r\nx-a: 2\r\n\r\n'],
      };
      const raw = await rawServer((request) => [...answers[new URL(request.split(' ')[1]!, 'http://x').pathname]!]);
      try {
        const fresh = keptAliveFetch();
        for (const path of Object.keys(answers)) {
          const mine = await fresh(`${raw.url}${path}`, { method: 'POST', body: '{}' });
          const theirs = await fetch(`${raw.url}${path}`, { method: 'POST', body: '{}' });
          expect({ ...(await read(mine)), statusText: mine.statusText, a: mine.headers.get('x-a') }).toEqual({
            ...(await read(theirs)),
            statusText: theirs.statusText,
            a: theirs.headers.get('x-a'),
          });
        }
        // An interim answer is read past, as RFC 9110 (15.2) asks of a client (undici refuses one it did not ask for).
        const interim = ['HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok'];
        answers['/interim'] = interim;
        expect(await read(await fresh(`${raw.url}/interim`, {}))).toMatchObject({ status: 201, text: 'ok' });
        // Every request went out whole, its length stated, its Host named.
        expect(raw.requests[0]).toBe(`POST /length HTTP/1.1\r\nhost: ${new URL(raw.url).host}\r\ncontent-length: 2\r\n\r\n{}`);
        // A GET states no length; the answer to a HEAD has no body, whatever its length says.
        answers['/head'] = ['HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n'];
        expect(await read(await fresh(`${raw.url}/head`, { method: 'HEAD' }))).toMatchObject({ status: 200, text: '' });
        expect(await read(await fresh(`${raw.url}/length?q=1`, {}))).toMatchObject({ status: 200, text: '{"a":"bc"}' });
        expect(raw.requests.at(-1)).toBe(`GET /length?q=1 HTTP/1.1\r\nhost: ${new URL(raw.url).host}\r\n\r\n`);
      } finally {
        await raw.close();
      }
    });

    it('fails closed on an answer it cannot read, a connection closed before the answer, and a header that would end its line', async () => {
      const raw = await rawServer((request) => {
        const path = request.split(' ')[1]!;
        if (path === '/garbage') return ['SMTP ready\r\n\r\n'];
        if (path === '/cut') return ['HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf', 'END'];
        return ['HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'];
      });
      try {
        const fresh = keptAliveFetch();
        for (const path of ['/garbage', '/cut']) {
          const e = (await fresh(`${raw.url}${path}`, { method: 'POST', body: '{}' }).catch((x: unknown) => x)) as TypeError;
          expect(e).toBeInstanceOf(TypeError);
          expect(e.message).toBe('fetch failed');
          expect(e.cause).toBeInstanceOf(Error);
        }
        const sent = raw.requests.length;
        await expect(fresh(`${raw.url}/ok`, { headers: { authorization: 'Bearer k\r\nx-injected: 1' } })).rejects.toThrow(TypeError);
        expect(raw.requests).toHaveLength(sent);
        expect((await fresh(`${raw.url}/ok`, {})).status).toBe(200);
      } finally {
        await raw.close();
      }
    });
  });
});
