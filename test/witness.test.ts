/**
 * Witnessing, piece by piece: C2SP cosignatures against an independent vector,
 * the policy parser, and the add-checkpoint client against the test witness
 * (test/support/test-witness.ts, written from the C2SP text) over real HTTP.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { openLedger } from '../src/ledger/db.ts';
import { thinCosignatures } from '../src/ledger/witnesses.ts';
import { tempDir } from './support/server.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cosign, cosignerVkey, cosignersOf, parseCosignerKey, verifyCosignature } from '../src/crypto/cosignature.ts';
import { signerOf } from '../src/crypto/ed25519.ts';
import { checkpointText, signNote, verifierKey } from '../src/crypto/note.ts';
import { PolicyError, parseWitnessPolicy, quorumHolds } from '../src/crypto/witness-policy.ts';
import { addCheckpoint, addCheckpointBody } from '../src/net/witness-client.ts';
import { startTestWitness, type TestWitness } from './support/test-witness.ts';

const V = JSON.parse(readFileSync(new URL('./vectors/c2sp-witness.json', import.meta.url), 'utf8')) as Record<string, unknown> & {
  witness_name: string;
  witness_vkey: string;
  witness_private_seed_hex: string;
  log_vkey: string;
  checkpoint: string;
  timestamp: number;
  cosignature_line: string;
  cosigned_checkpoint: string;
  add_checkpoint_request_body: string;
  add_checkpoint_old_size: number;
  consistency_proof_base64: string[];
};
const body = V.checkpoint.slice(0, V.checkpoint.lastIndexOf('\n\n') + 1);
const PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');

describe('C2SP tlog-cosignature against an independent vector', () => {
  const key = parseCosignerKey(V.witness_vkey);

  it('reproduces the vector cosignature byte for byte from its seed', () => {
    const priv = createPrivateKey({
      key: Buffer.concat([PKCS8, Buffer.from(V.witness_private_seed_hex, 'hex')]),
      format: 'der',
      type: 'pkcs8',
    });
    const raw = createPublicKey(priv).export({ format: 'der', type: 'spki' }).subarray(12);
    expect(raw.equals(key.raw)).toBe(true);
    expect(cosign(body, V.timestamp, V.witness_name, signerOf(priv))).toBe(V.cosignature_line);
  });

  it('verifies the vector cosignature and finds its signer in the cosigned checkpoint', async () => {
    expect(await verifyCosignature(body, V.cosignature_line, key)).toBe(V.timestamp);
    expect(await cosignersOf(V.cosigned_checkpoint, [key])).toEqual([
      { name: V.witness_name, vkey: V.witness_vkey, timestamp: V.timestamp },
    ]);
    // The log's own signature line is not a cosignature by this key: ignored.
    expect(await cosignersOf(V.checkpoint, [key])).toEqual([]);
  });

  it('refuses a tampered cosignature, and a cosignature over another checkpoint', async () => {
    const blob = Buffer.from(V.cosignature_line.split(' ')[2]!.trim(), 'base64');
    blob[40]! ^= 1;
    const tampered = `\u2014 ${V.witness_name} ${blob.toString('base64')}\n`;
    await expect(verifyCosignature(body, tampered, key)).rejects.toThrow(/does not verify/);
    await expect(verifyCosignature(body.replace('\n1000\n', '\n1001\n'), V.cosignature_line, key)).rejects.toThrow(/does not verify/);
    await expect(cosignersOf(V.cosigned_checkpoint.replace(V.cosignature_line, tampered), [key])).rejects.toThrow(/does not verify/);
  });

  it('refuses vkeys that are not cosignature/v1', () => {
    expect(() => parseCosignerKey(V.log_vkey)).toThrow(/0x01 is not cosignature\/v1/);
    expect(() => parseCosignerKey(V.witness_vkey.replace('+1d6c1c2d+', '+1d6c1c2e+'))).toThrow(/key ID does not match/);
    expect(() => parseCosignerKey('no-plus-signs')).toThrow(/name\+keyid\+base64/);
  });

  it('writes the add-checkpoint body of the vector', () => {
    const proof = V.consistency_proof_base64.map((h) => new Uint8Array(Buffer.from(h, 'base64')));
    expect(addCheckpointBody(V.add_checkpoint_old_size, proof, V.checkpoint)).toBe(V.add_checkpoint_request_body);
  });
});

const wk = (n: string) => {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  return { raw, line: (url = `https://${n}.witness.invalid/w`) => `witness ${n} ${cosignerVkey(n, raw)} ${url}` };
};

describe('witness policy', () => {
  const a = wk('a');
  const b = wk('b');
  const c = wk('c');

  it('parses witnesses, groups (any, all, K) and the quorum, ignoring comments', () => {
    const p = parseWitnessPolicy(
      `# three witnesses\n${a.line()}\n${b.line('http://127.0.0.1:9/b/')}  # trailing\n${c.line()}\n\ngroup two 2 a b c\ngroup all-of all a b\ngroup any-of any two all-of\nquorum two\n`,
    );
    expect(p.witnesses.map((w) => w.name)).toEqual(['a', 'b', 'c']);
    expect(p.witnesses[1]!.url).toBe('http://127.0.0.1:9/b');
    expect(p.groups).toEqual([
      { name: 'two', threshold: 2, members: ['a', 'b', 'c'] },
      { name: 'all-of', threshold: 2, members: ['a', 'b'] },
      { name: 'any-of', threshold: 1, members: ['two', 'all-of'] },
    ]);
    expect(quorumHolds(p, new Set(['a']))).toBe(false);
    expect(quorumHolds(p, new Set(['a', 'c']))).toBe(true);
    expect(quorumHolds({ ...p, quorum: 'all-of' }, new Set(['a', 'c']))).toBe(false);
    expect(quorumHolds({ ...p, quorum: 'all-of' }, new Set(['a', 'b']))).toBe(true);
    expect(quorumHolds({ ...p, quorum: 'any-of' }, new Set(['b']))).toBe(false);
    expect(quorumHolds({ ...p, quorum: 'any-of' }, new Set(['b', 'c']))).toBe(true);
    expect(quorumHolds({ ...p, quorum: 'c' }, new Set(['c']))).toBe(true);
    expect(parseWitnessPolicy(`${a.line()}\nquorum none\n`).quorum).toBeNull();
  });

  const bad: Array<[string, string, RegExp]> = [
    ['unknown keyword', `${a.line()}\nwitnes x\nquorum a`, /^line 2: unknown keyword "witnes"/],
    ['missing URL', `witness a ${a.line().split(' ')[2]}\nquorum a`, /^line 1: expected "witness <name> <vkey> <submission URL prefix>"/],
    [
      'note vkey (type 0x01)',
      `# log key by mistake\nwitness a ${V.log_vkey} https://w.witness.invalid\nquorum a`,
      /^line 2: witness a: bad vkey: key type 0x01/,
    ],
    ['duplicate name', `${a.line()}\n${a.line().replace('witness a', 'witness a')}\nquorum a`, /^line 2: the name "a" is already defined/],
    ['undefined member', `${a.line()}\ngroup g any a b\nquorum g`, /^line 2: group g: member "b" is not a witness or group defined above/],
    ['threshold too high', `${a.line()}\n${b.line()}\ngroup g 3 a b\nquorum g`, /^line 3: group g: threshold 3 is more than its 2 members/],
    ['bad threshold', `${a.line()}\ngroup g most a\nquorum g`, /^line 2: group g: the threshold must be any, all or a number/],
    ['two quorums', `${a.line()}\nquorum a\nquorum a`, /^line 3: quorum is already set on line 2/],
    ['unknown quorum', `${a.line()}\nquorum z`, /^line 2: quorum: "z" is not a witness or group defined above/],
    ['no quorum', `${a.line()}\n`, /no "quorum" line/],
    ['not a URL', `${a.line('not a url').replace('not a url', 'nope')}\nquorum a`, /^line 1: witness a: "nope" is not a URL/],
    ['ftp URL', `${a.line('ftp://w.witness.invalid/')}\nquorum a`, /^line 1: witness a: the submission prefix must be an http\(s\) URL/],
  ];
  for (const [what, text, want] of bad) {
    it(`names the line of a mistake: ${what}`, () => {
      expect(() => parseWitnessPolicy(text)).toThrow(PolicyError);
      expect(() => parseWitnessPolicy(text)).toThrow(want);
    });
  }
});

describe('add-checkpoint client against the test witness', () => {
  const origin = 'log.example/receipts';
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  const note = (size: number, root: Buffer) => signNote(checkpointText({ origin, size, root }), origin, signerOf(privateKey));
  let w: TestWitness;
  let policyWitness: ReturnType<typeof parseWitnessPolicy>['witnesses'][number];

  beforeAll(async () => {
    w = await startTestWitness('witness.test/w1', { [origin]: verifierKey(origin, raw) });
    policyWitness = parseWitnessPolicy(`witness w1 ${w.vkey} ${w.url}\nquorum w1\n`).witnesses[0]!;
  });
  afterAll(() => w.close());

  it('gets a verified cosignature, then a 409 naming the size it now holds', async () => {
    const root = Buffer.alloc(32, 7);
    const before = Math.floor(Date.now() / 1000);
    const first = await addCheckpoint(policyWitness, 0, [], note(5, root), 2000);
    const after = Math.floor(Date.now() / 1000);
    expect(first.kind).toBe('cosigned');
    if (first.kind !== 'cosigned') return;
    // The witness's time of cosigning, in seconds: while the request ran.
    expect(first.timestamp).toBeGreaterThanOrEqual(before);
    expect(first.timestamp).toBeLessThanOrEqual(after);
    expect((await cosignersOf(note(5, root) + first.line, [policyWitness.key])).map((c) => c.name)).toEqual(['witness.test/w1']);
    // Same size and root again from 5: cosigned again; from 0: conflict naming 5.
    expect((await addCheckpoint(policyWitness, 5, [], note(5, root), 2000)).kind).toBe('cosigned');
    expect(await addCheckpoint(policyWitness, 0, [], note(5, root), 2000)).toEqual({ kind: 'conflict', size: 5 });
    // Same size, another root: a 409 without a size is a failure, not a resubmission.
    expect(await addCheckpoint(policyWitness, 5, [], note(5, Buffer.alloc(32, 8)), 2000)).toMatchObject({ kind: 'failed', status: 409 });
  });

  it('reports a bad proof (422), an unknown log (404), a tampered cosignature, a slow and a down witness as failures', async () => {
    expect(await addCheckpoint(policyWitness, 5, [Buffer.alloc(32)], note(9, Buffer.alloc(32, 9)), 2000)).toMatchObject({
      kind: 'failed',
      status: 422,
    });
    const stranger = signNote(
      checkpointText({ origin: 'other.example/x', size: 1, root: Buffer.alloc(32) }),
      'other.example/x',
      signerOf(privateKey),
    );
    expect(await addCheckpoint(policyWitness, 0, [], stranger, 2000)).toMatchObject({ kind: 'failed', status: 404 });
    w.mode = 'tamper';
    w.forget(origin);
    expect(await addCheckpoint(policyWitness, 0, [], note(5, Buffer.alloc(32, 7)), 2000)).toMatchObject({
      kind: 'failed',
      status: 200,
      error: expect.stringMatching(/does not verify/),
    });
    w.mode = 'slow';
    w.slowMs = 600;
    expect(await addCheckpoint(policyWitness, 5, [], note(5, Buffer.alloc(32, 7)), 150)).toMatchObject({
      kind: 'failed',
      error: 'no answer within 150 ms',
    });
    w.mode = 'ok';
    await w.down();
    expect(await addCheckpoint(policyWitness, 5, [], note(5, Buffer.alloc(32, 7)), 1000)).toMatchObject({
      kind: 'failed',
      error: expect.stringMatching(/^unreachable/),
    });
    await w.up();
    expect((await addCheckpoint(policyWitness, 5, [], note(5, Buffer.alloc(32, 7)), 1000)).kind).toBe('cosigned');
  });
});

describe('thinning old cosignatures', () => {
  it('keeps one cosigned checkpoint per log and minute (the one most witnesses cosigned), and only past the hour', async () => {
    const dir = tempDir();
    const ledger = await openLedger(
      loadConfig({ DATABASE_URL: `file:${join(dir, 'db')}`, SIGNING_KEY_FILE: join(dir, 'k.json'), LOG_LEVEL: 'silent' }),
    );
    try {
      const rows: Array<[number, string, string]> = [
        [10, 'a', '2026-01-01T10:00:01.000Z'],
        [11, 'a', '2026-01-01T10:00:02.000Z'],
        [11, 'b', '2026-01-01T10:00:02.500Z'],
        [12, 'a', '2026-01-01T10:00:03.000Z'],
        [12, 'b', '2026-01-01T10:00:03.000Z'],
        [20, 'a', '2026-01-01T10:01:00.000Z'],
        [20, 'b', '2026-01-01T10:01:00.000Z'],
        [21, 'a', '2026-01-01T10:01:30.000Z'],
        [30, 'a', '2026-01-01T11:30:00.000Z'],
        [7, 'a', '2026-01-01T10:00:00.000Z'],
      ];
      await ledger.write(async (tx) => {
        for (const [size, vkey, at] of rows) {
          await tx.execute({
            sql: 'INSERT INTO witness_cosignatures (log, tree_size, vkey, line, cosigned_at) VALUES (?, ?, ?, ?, ?)',
            args: [size === 7 ? 'astl' : 'receipts', size, vkey, 'x', at],
          });
        }
      });
      const after = await ledger.write((tx) => thinCosignatures(tx, 'receipts', '2026-01-01T11:00:00.000Z', 0));
      const left = await ledger.read.execute('SELECT DISTINCT log, tree_size FROM witness_cosignatures ORDER BY log, tree_size');
      expect(left.rows.map((r) => `${String(r.log)}/${Number(r.tree_size)}`)).toEqual([
        'astl/7',
        'receipts/11',
        'receipts/20',
        'receipts/30',
      ]);
      // The last old minute is looked at again next time; the settled one is not.
      expect(after).toBe(12);
      expect(await ledger.write((tx) => thinCosignatures(tx, 'receipts', '2026-01-01T11:00:00.000Z', after))).toBe(12);
    } finally {
      await ledger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
