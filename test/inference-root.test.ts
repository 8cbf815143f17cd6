/**
 * Inference-root sessions are Merkle logs (issue 13, point 5): every seal's
 * session root, for sizes that are and are not powers of two, equals the RFC
 * 9162 root a second implementation here recomputes from the seals alone
 * (node:crypto, recursive definition); the session log is private; and the
 * migration rebuilds the log of a session sealed before, with the same root.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

const sha = (...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest();
/** Canonical JSON of a flat object of strings: keys sorted, no spaces. */
const canon = (o: Record<string, string>) =>
  `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(o[k])}`)
    .join(',')}}`;
/** RFC 9162 §2.1.1, straight from the definition. */
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha();
  if (leaves.length === 1) return leaves[0]!;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return sha(Buffer.from([1]), mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

describe('inference sessions as Merkle logs', () => {
  let s: TestServer;
  let upstream: Server;
  let key: { id: string; secret: string; accountId: string };

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        const body = JSON.parse(text);
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            object: 'chat.completion',
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: `echo: ${body.messages.at(-1).content}` } }],
          }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    s = await startTestServer({
      INFERENCE_UPSTREAM_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`,
      INFERENCE_SESSION_MAX_EXCHANGES: '9',
    });
    key = await s.newKey('agent');
  });
  afterAll(async () => {
    await s.stop();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it('chains every exchange into a root that a second implementation recomputes, at each size', async () => {
    let session: string | undefined;
    const leaves: Buffer[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await s.fetch('/api/v1/inference/chat/completions', {
        json: { model: 'm', messages: [{ role: 'user', content: `turn ${i}` }] },
        key: key.secret,
        headers: session ? { 'fusegate-session': session } : {},
      });
      expect(res.status).toBe(200);
      session = res.headers.get('fusegate-session')!;
      const { fusegate: seal } = await res.json();
      const leaf = sha(
        Buffer.from([0]),
        Buffer.from(canon({ receipt_id: seal.receipt_id, request_sha256: seal.request_sha256, response_sha256: seal.response_sha256 })),
      );
      leaves.push(leaf);
      expect(seal).toMatchObject({ index: i, session_size: i + 1, leaf_hash: leaf.toString('hex') });
      expect(seal.session_root, `size ${i + 1}`).toBe(mth(leaves).toString('hex'));
    }
    const view = await (await s.fetch(`/api/v1/inference/sessions/${session}`, { key: key.secret })).json();
    expect(view).toMatchObject({ size: 7, root: mth(leaves).toString('hex') });

    // The session's log is private: not listed, not served by the public log routes.
    const logs = (await (await s.fetch('/api/v1/logs')).json()).logs.map((l: { name: string }) => l.name);
    expect(logs).toEqual(expect.arrayContaining(['receipts']));
    expect(logs.some((n: string) => n.includes(session!))).toBe(false);
    expect((await s.fetch(`/api/v1/logs/${encodeURIComponent(`inference/${session}`)}`)).status).toBe(404);

    const again = await (await s.fetch(`/api/v1/inference/sessions/${session}`, { key: key.secret })).json();
    expect(again).toMatchObject({ size: 7, root: mth(leaves).toString('hex') });
    const next = await s.fetch('/api/v1/inference/chat/completions', {
      json: { model: 'm', messages: [{ role: 'user', content: 'turn 7' }] },
      key: key.secret,
      headers: { 'fusegate-session': session! },
    });
    const { fusegate: seal } = await next.json();
    leaves.push(
      sha(
        Buffer.from([0]),
        Buffer.from(canon({ receipt_id: seal.receipt_id, request_sha256: seal.request_sha256, response_sha256: seal.response_sha256 })),
      ),
    );
    expect(seal).toMatchObject({ index: 7, session_size: 8, session_root: mth(leaves).toString('hex') });
  });

  it('a session belongs to the account: another key of it reads and continues it; another account gets 404', async () => {
    const chat = (secret: string, session?: string) =>
      s.fetch('/api/v1/inference/chat/completions', {
        json: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
        key: secret,
        headers: session ? { 'fusegate-session': session } : {},
      });
    const session = (await chat(key.secret)).headers.get('fusegate-session')!;
    const colleague = await s.newKey('colleague', 1000, 'agent', key.accountId);
    const stranger = await s.newKey('stranger');
    const continued = await chat(colleague.secret, session);
    expect(continued.status).toBe(200);
    expect((await continued.json()).fusegate).toMatchObject({ index: 1, session_size: 2 });
    expect((await (await s.fetch(`/api/v1/inference/sessions/${session}`, { key: colleague.secret })).json()).size).toBe(2);
    const foreign = await chat(stranger.secret, session);
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).code).toBe('unknown_session');
    expect((await s.fetch(`/api/v1/inference/sessions/${session}`, { key: stranger.secret })).status).toBe(404);
  });
});
