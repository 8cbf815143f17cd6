/**
 * A witness for tests, written from the C2SP texts (c2sp.org/tlog-witness,
 * tlog-cosignature, signed-note, and RFC 9162 2.1.4.2 for the proof), sharing
 * no code with the gate's client: its own note parsing, signature checks,
 * consistency verification and cosigning. A real HTTP server on an ephemeral
 * port, with the fault modes a log must live with:
 *  - down: the port refuses connections (`down()` / `up()`),
 *  - slow: answers after `slowMs`,
 *  - forget: loses its state (then answers 409 "0"),
 *  - behind: its state set back to an older checkpoint (409 with that size),
 *  - unprocessable: answers 422 to everything,
 *  - tamper: returns a cosignature whose signature bytes are altered.
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type WitnessMode = 'ok' | 'slow' | 'unprocessable' | 'tamper';

export interface TestWitness {
  name: string;
  vkey: string;
  /** The submission prefix. */
  url: string;
  mode: WitnessMode;
  slowMs: number;
  /** Every add-checkpoint request received (its body), including refused ones. */
  requests: string[];
  /** When each of `requests` arrived (Date.now()). */
  receivedAt: number[];
  /** Resolves once `check` holds, checked now and as each request arrives (no timer). */
  requested(check: () => boolean): Promise<void>;
  /** The latest cosigned size and root per origin. */
  state: Map<string, { size: number; root: Buffer }>;
  forget(origin: string): void;
  /** Trusts a log (origin -> its note vkey) from now on. */
  trust(origin: string, logVkey: string): void;
  setLatest(origin: string, size: number, rootB64: string): void;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

const DASH = '\u2014';
const SPKI = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const node = (l: Buffer, r: Buffer) => sha256(Buffer.from([1]), l, r);

/** RFC 9162 2.1.4.2, as written there. */
function consistent(first: number, second: number, proof: Buffer[], firstRoot: Buffer, secondRoot: Buffer): boolean {
  if (first > second) return false;
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  if (first === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  let path = [...proof];
  // If first is an exact power of 2, prepend first_hash to the path.
  if ((first & (first - 1)) === 0) path = [firstRoot, ...path];
  let fn = first - 1;
  let sn = second - 1;
  // If LSB(fn) is set, right-shift both fn and sn until LSB(fn) is not set.
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = node(c, fr);
      sr = node(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = node(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(firstRoot) && sr.equals(secondRoot) && sn === 0;
}

/** A signed-note verifier for the log's Ed25519 key (type 0x01), from its vkey. */
function logVerifier(vkey: string): { name: string; id: Buffer; key: KeyObject } {
  const [name, idHex, b64] = vkey.split('+', 2).concat(vkey.split('+').slice(2).join('+'));
  const raw = Buffer.from(b64!, 'base64');
  if (raw[0] !== 0x01 || raw.length !== 33) throw new Error('test witness: not an Ed25519 note vkey');
  return {
    name: name!,
    id: Buffer.from(idHex!, 'hex'),
    key: createPublicKey({ key: Buffer.concat([SPKI, raw.subarray(1)]), format: 'der', type: 'spki' }),
  };
}

function answer(res: ServerResponse, status: number, body = '', type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
}

/**
 * Starts a witness that trusts `logs` (origin -> the log's note vkey).
 * `seedHex` fixes its Ed25519 key (32 bytes hex); otherwise a random one.
 */
export async function startTestWitness(name: string, logs: Record<string, string>, seedHex?: string): Promise<TestWitness> {
  const seed = seedHex ? Buffer.from(seedHex, 'hex') : createHash('sha256').update(`${name}/${Math.random()}`).digest();
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8, seed]), format: 'der', type: 'pkcs8' });
  const raw = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(12);
  const keyId = sha256(Buffer.from(`${name}\n`), Buffer.from([0x04]), raw).subarray(0, 4);
  const trusted = new Map(Object.entries(logs).map(([origin, vkey]) => [origin, logVerifier(vkey)]));
  const state = new Map<string, { size: number; root: Buffer }>();
  const requests: string[] = [];
  const receivedAt: number[] = [];
  const waiting = new Set<() => void>();
  const sockets = new Set<Socket>();

  const handle = async (req: IncomingMessage, res: ServerResponse, w: TestWitness) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/add-checkpoint')) return answer(res, 404, 'not found\n');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    receivedAt.push(Date.now());
    requests.push(body);
    waiting.forEach((check) => check());
    if (w.mode === 'slow') await new Promise((r) => setTimeout(r, w.slowMs));
    if (w.mode === 'unprocessable') return answer(res, 422, 'consistency proof does not verify\n');
    // old size line, proof lines, empty line, checkpoint.
    const blank = body.indexOf('\n\n');
    if (blank < 0) return answer(res, 400, 'no empty line\n');
    const head = body.slice(0, blank).split('\n');
    const note = body.slice(blank + 2);
    const old = /^old (0|[1-9][0-9]*)$/.exec(head[0] ?? '');
    if (!old) return answer(res, 400, 'bad old size line\n');
    const oldSize = Number(old[1]);
    const proof = head.slice(1).map((l) => Buffer.from(l, 'base64'));
    if (proof.length > 63) return answer(res, 400, 'too many proof lines\n');
    const sigAt = note.lastIndexOf('\n\n');
    if (sigAt < 0 || !note.endsWith('\n')) return answer(res, 400, 'no note signatures\n');
    const text = note.slice(0, sigAt + 1);
    const [origin, sizeLine, rootLine] = text.split('\n');
    const log = trusted.get(origin ?? '');
    if (!log) return answer(res, 404, 'unknown origin\n');
    const signed = note
      .slice(sigAt + 2, -1)
      .split('\n')
      .some((line) => {
        const m = new RegExp(`^${DASH} (\\S+) (\\S+)$`, 'u').exec(line);
        if (!m || m[1] !== log.name) return false;
        const blob = Buffer.from(m[2]!, 'base64');
        return blob.length === 68 && blob.subarray(0, 4).equals(log.id) && verify(null, Buffer.from(text), log.key, blob.subarray(4));
      });
    if (!signed) return answer(res, 403, 'no signature by a trusted key\n');
    const size = Number(sizeLine);
    const root = Buffer.from(rootLine ?? '', 'base64');
    if (oldSize > size) return answer(res, 400, 'old size beyond the checkpoint\n');
    // Checked and updated with no await in between: atomic in this process.
    const latest = state.get(origin!) ?? { size: 0, root: Buffer.alloc(0) };
    if (oldSize !== latest.size) return answer(res, 409, `${latest.size}\n`, 'text/x.tlog.size');
    if (oldSize === size) {
      if (!latest.root.equals(root)) return answer(res, 409, `${latest.size}\n`, 'text/x.tlog.size');
    } else if (!consistent(oldSize, size, proof, latest.root, root)) {
      return answer(res, 422, 'consistency proof does not verify\n');
    }
    state.set(origin!, { size, root });
    const time = Math.floor(Date.now() / 1000);
    const ts = Buffer.alloc(8);
    ts.writeBigUInt64BE(BigInt(time));
    const sig = sign(null, Buffer.from(`cosignature/v1\ntime ${time}\n${text}`), privateKey);
    if (w.mode === 'tamper') sig[0]! ^= 0xff;
    answer(res, 200, `${DASH} ${name} ${Buffer.concat([keyId, ts, sig]).toString('base64')}\n`);
  };

  let server: Server;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer((req, res) => void handle(req, res, w).catch(() => answer(res, 500, 'error\n')));
      server.on('connection', (s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  await listen();

  const w: TestWitness = {
    name,
    vkey: `${name}+${keyId.toString('hex')}+${Buffer.concat([Buffer.from([0x04]), raw]).toString('base64')}`,
    url: `http://127.0.0.1:${port}/witness`,
    mode: 'ok',
    slowMs: 3000,
    requests,
    receivedAt,
    requested: (check) =>
      new Promise<void>((resolve) => {
        const evaluate = () => {
          if (!check()) return;
          waiting.delete(evaluate);
          resolve();
        };
        waiting.add(evaluate);
        evaluate();
      }),
    state,
    forget: (origin) => void state.delete(origin),
    trust: (origin, logVkey) => void trusted.set(origin, logVerifier(logVkey)),
    setLatest: (origin, size, rootB64) => void state.set(origin, { size, root: Buffer.from(rootB64, 'base64') }),
    down: stop,
    up: listen,
    close: stop,
  };
  return w;
}
