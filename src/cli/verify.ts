/**
 * `verify …`: check what the service publishes without trusting it, offline
 * from files or against a URL. Nothing here opens the database.
 *
 *   verify receipt SOURCE [--jwks SOURCE] [--log-key VKEY] [--witness-policy FILE] [--require-quorum]
 *   verify checkpoint SOURCE --log-key VKEY
 *   verify inclusion --checkpoint SOURCE --log-key VKEY --proof SOURCE (--leaf-file FILE | --leaf-hash B64)
 *   verify consistency --old SOURCE --new SOURCE --log-key VKEY --proof SOURCE
 *   verify exclusion SOURCE --job JOB_ID (--public-key SOURCE | --note-key VKEY) [--origin ORIGIN]
 *
 * A SOURCE is a file path or an http(s) URL. Exit 0 when everything verifies, 1 when not.
 */
import { readFileSync } from 'node:fs';
import { leafHash, verifyConsistency, verifyInclusion, type Hash } from '../crypto/merkle.ts';
import { verifyExclusionProof, type ExclusionProofJson } from '../crypto/exclusion.ts';
import { openNote, parseCheckpointText, type Checkpoint } from '../crypto/note.ts';
import { jwkKeyLookup, type KeyLookup, type PublicJwk } from '../crypto/jws-verify.ts';
import { liveOrTest, parseReceiptDocument, verifyReceiptEvidence, verifyReceiptJws } from '../crypto/receipt.ts';
import { parseWitnessPolicy, witnessesOf, type WitnessPolicy, type Witnessed } from '../crypto/witness-policy.ts';
import { type CliContext, type Command, UsageError, requireFlag } from './shared.ts';

const isUrl = (s: string) => /^https?:\/\//.test(s);

async function read(source: string, accept = 'application/json', bearer?: string): Promise<string> {
  if (!isUrl(source)) return readFileSync(source, 'utf8');
  const res = await fetch(source, { headers: { accept, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) } });
  if (!res.ok) throw new Error(`${source} answered ${res.status}`);
  return res.text();
}

const unb64 = (s: string): Hash => new Uint8Array(Buffer.from(s, 'base64'));

async function jwksLookup(source: string): Promise<KeyLookup> {
  return jwkKeyLookup((JSON.parse(await read(source)) as { keys: PublicJwk[] }).keys);
}

async function checkpointOf(note: string, vkey: string): Promise<Checkpoint> {
  return parseCheckpointText(await openNote(note, vkey));
}

function report(ctx: CliContext, checks: Record<string, { ok: boolean; detail: string }>, extra: Record<string, unknown> = {}): number {
  const ok = Object.values(checks).every((c) => c.ok);
  const lines = Object.entries(checks).map(([name, c]) => `${c.ok ? 'ok  ' : 'FAIL'} ${name}: ${c.detail}`);
  ctx.out([...lines, ok ? 'verified' : 'NOT verified'].join('\n'), { verified: ok, checks, ...extra });
  return ok ? 0 : 1;
}

async function attempt(f: () => string | Promise<string>): Promise<{ ok: boolean; detail: string }> {
  try {
    return { ok: true, detail: await f() };
  } catch (e) {
    return { ok: false, detail: (e as Error).message };
  }
}

export const verifyCommands: Record<string, Command> = {
  'verify receipt': {
    usage: 'verify receipt SOURCE [--jwks SOURCE] [--log-key VKEY] [--witness-policy FILE] [--require-quorum]',
    summary:
      "check a receipt: its signature, and (for a verify_url or receipt document) its inclusion in the signed receipts log and its witnesses' cosignatures",
    async run(ctx) {
      const source = ctx.args[0];
      if (!source)
        throw new UsageError(
          'give a receipt: a verify_url, a receipt document (JSON or base64url, as sent in Gate-Receipt), or a file holding the JWS',
        );
      const text = (await read(source)).trim();
      const evidence = parseReceiptDocument(text);
      const jws = evidence ? evidence.receipt : text;
      const jwksSource =
        typeof ctx.flags.jwks === 'string'
          ? ctx.flags.jwks
          : isUrl(source)
            ? new URL('/.well-known/prefinality-jwks.json', source).href
            : undefined;
      if (!jwksSource) throw new UsageError('--jwks is required offline (a JWKS file, e.g. saved from /.well-known/prefinality-jwks.json)');
      const keys = await jwksLookup(jwksSource);
      if (!evidence) {
        const sig = await verifyReceiptJws(keys, text);
        const checks: Record<string, { ok: boolean; detail: string }> = {
          signature: sig.valid
            ? { ok: true, detail: `EdDSA signature by kid ${sig.kid}` }
            : { ok: false, detail: `${sig.reason}: ${sig.detail}` },
        };
        // Alone, a JWS names no log: what it claims is said, and the log is left to its verify_url.
        if (sig.valid && sig.payload.test === true)
          checks.live_or_test = { ok: true, detail: 'it claims to be a TEST receipt (not checked against a log: give its verify_url)' };
        return report(ctx, checks, sig.valid ? { payload: sig.payload, ...(sig.payload.test === true ? { test: true } : {}) } : {});
      }
      // The log key: given (trusted), else the one the evidence names (trust on first use, said so).
      const pinned = typeof ctx.flags['log-key'] === 'string' ? ctx.flags['log-key'] : undefined;
      // The witnesses: a pinned policy file, else the policy the document states (said so), else none.
      const policyFile = typeof ctx.flags['witness-policy'] === 'string' ? ctx.flags['witness-policy'] : undefined;
      let policy: WitnessPolicy | undefined;
      if (policyFile) policy = parseWitnessPolicy(readFileSync(policyFile, 'utf8'));
      else if (evidence.witnesses?.policy) policy = parseWitnessPolicy(evidence.witnesses.policy);
      const requireQuorum = ctx.flags['require-quorum'] === true;
      if (requireQuorum && !policy) throw new UsageError('--require-quorum needs a witness policy (--witness-policy FILE)');
      const checks = await verifyReceiptEvidence(evidence, {
        keys,
        logKey: pinned ?? evidence.log.verifier_key,
        ...(policy ? { witnesses: policy } : {}),
        requireQuorum,
      });
      if (!pinned && checks.checkpoint?.ok) checks.checkpoint.detail += ' (key taken from the evidence: pass --log-key to pin it)';
      if (policy && !policyFile && checks.witnesses)
        checks.witnesses.detail += ' (policy taken from the evidence: pass --witness-policy to pin it)';
      let witnesses: Witnessed | undefined;
      try {
        witnesses = policy ? await witnessesOf(evidence.checkpoint, policy) : undefined;
      } catch {
        witnesses = undefined;
      }
      const payload = jws ? undefined : evidence.payload;
      const sig = jws ? await verifyReceiptJws(keys, jws) : undefined;
      const claimed = sig?.valid ? sig.payload : evidence.payload;
      // Live or test, as /verify checks it: against the log of the checkpoint the proof verified with.
      checks.live_or_test = await attempt(async () =>
        liveOrTest(claimed, (await checkpointOf(evidence.checkpoint, pinned ?? evidence.log.verifier_key)).origin),
      );
      return report(ctx, checks, {
        ...(sig?.valid ? { payload: sig.payload } : payload ? { payload } : {}),
        ...(claimed.test === true ? { test: true } : {}),
        ...(witnesses ? { witnesses } : {}),
      });
    },
  },
  'verify checkpoint': {
    usage: 'verify checkpoint SOURCE --log-key VKEY',
    summary: 'check a signed checkpoint note against a log verifier key',
    async run(ctx) {
      const source = ctx.args[0];
      if (!source) throw new UsageError('give a checkpoint file or URL');
      const note = await read(source, 'text/plain');
      let cp: Checkpoint | undefined;
      const checks = {
        signature: await attempt(async () => ((cp = await checkpointOf(note, requireFlag(ctx, 'log-key'))), 'note signature verifies')),
      };
      return report(ctx, checks, cp ? { origin: cp.origin, tree_size: cp.size, root_hash: Buffer.from(cp.root).toString('base64') } : {});
    },
  },
  'verify inclusion': {
    usage: 'verify inclusion --checkpoint SOURCE --log-key VKEY --proof SOURCE (--leaf-file FILE | --leaf-hash B64)',
    summary: 'check an inclusion proof (from /api/v1/logs/{log}/proof/inclusion) against a signed checkpoint',
    async run(ctx) {
      const vkey = requireFlag(ctx, 'log-key');
      const cp = await checkpointOf(await read(requireFlag(ctx, 'checkpoint'), 'text/plain'), vkey);
      const proof = JSON.parse(await read(requireFlag(ctx, 'proof'))) as {
        index: number;
        tree_size: number;
        leaf_hash: string;
        hashes: string[];
      };
      const file = ctx.flags['leaf-file'];
      const hash = ctx.flags['leaf-hash'];
      if (typeof file !== 'string' && typeof hash !== 'string') throw new UsageError('--leaf-file or --leaf-hash is required');
      const lh = typeof file === 'string' ? leafHash(readFileSync(file)) : unb64(hash as string);
      const checks = {
        inclusion: await attempt(() => {
          if (proof.tree_size !== cp.size) throw new Error(`proof is for size ${proof.tree_size}, the checkpoint has ${cp.size}`);
          verifyInclusion(proof.index, cp.size, lh, proof.hashes.map(unb64), cp.root);
          return `entry ${proof.index} is in ${cp.origin} at size ${cp.size}`;
        }),
      };
      return report(ctx, checks);
    },
  },
  'verify consistency': {
    usage: 'verify consistency --old SOURCE --new SOURCE --log-key VKEY --proof SOURCE',
    summary: 'check that a newer checkpoint extends an older one (append-only), with a consistency proof',
    async run(ctx) {
      const vkey = requireFlag(ctx, 'log-key');
      const older = await checkpointOf(await read(requireFlag(ctx, 'old'), 'text/plain'), vkey);
      const newer = await checkpointOf(await read(requireFlag(ctx, 'new'), 'text/plain'), vkey);
      const proof = JSON.parse(await read(requireFlag(ctx, 'proof'))) as { from: number; to: number; hashes: string[] };
      const checks = {
        consistency: await attempt(() => {
          if (older.origin !== newer.origin) throw new Error('the checkpoints are of different logs');
          if (proof.from !== older.size || proof.to !== newer.size) throw new Error('the proof is for other sizes');
          verifyConsistency(older.size, newer.size, proof.hashes.map(unb64), older.root, newer.root);
          return `${older.origin}: size ${older.size} is a prefix of size ${newer.size}`;
        }),
      };
      return report(ctx, checks);
    },
  },
  'verify exclusion': {
    usage: 'verify exclusion SOURCE --job JOB_ID (--public-key SOURCE | --note-key VKEY) [--origin ORIGIN]',
    summary:
      'check a PAS exclusion proof (a saved /v1/pas/exclusion answer, or its URL with FUSEGATE_API_KEY set) against the signed head: absent or present',
    async run(ctx) {
      const source = ctx.args[0];
      if (!source)
        throw new UsageError('give an exclusion answer: a file, or the /v1/pas/exclusion?job_id= URL (the key from FUSEGATE_API_KEY)');
      const job = requireFlag(ctx, 'job');
      const answer = JSON.parse(
        await read(source, 'application/json', isUrl(source) ? process.env.FUSEGATE_API_KEY : undefined),
      ) as ExclusionProofJson;
      const noteKey = ctx.flags['note-key'];
      const pkSource =
        typeof ctx.flags['public-key'] === 'string'
          ? ctx.flags['public-key']
          : isUrl(source)
            ? new URL('/crypto/public-key', source).href
            : undefined;
      if (typeof noteKey !== 'string' && !pkSource)
        throw new UsageError('--public-key (a file or URL of /crypto/public-key) or --note-key is required offline');
      let trust: Uint8Array | string;
      if (typeof noteKey === 'string') trust = noteKey;
      else trust = new Uint8Array(Buffer.from((JSON.parse(await read(pkSource!)) as { jwk: { x: string } }).jwk.x, 'base64url'));
      const origin = typeof ctx.flags.origin === 'string' ? ctx.flags.origin : undefined;
      let present: boolean | undefined;
      const checks = {
        exclusion: await attempt(async () => {
          const v = await verifyExclusionProof(job, answer, trust, origin);
          present = v.present;
          return `${job} ${v.present ? 'HAS a redeemed spend leaf' : 'has NO redeemed spend leaf'} in ${v.origin} at size ${v.size}${origin || typeof noteKey === 'string' ? '' : ' (pass --origin to pin whose tree)'}`;
        }),
      };
      return report(ctx, checks, present === undefined ? {} : { job_id: job, present, excluded: !present });
    },
  },
};
