/**
 * Absence witnesses (SPEC 2.4 absence):
 *   POST /api/v1/absence/witness          key, witness toll   signed non-membership witness of an act kind
 *   POST /standards/absence-ledger/verify public              checks a witness: signature, then the sorted-Merkle proof
 *   GET  /api/v1/absence/scale            public              illustrative projection
 *
 * The declared surface is an entity's newest ASTL manifest, a catalog preset,
 * or a list given in the request. Its sorted Merkle tree (src/crypto/sorted-merkle.ts)
 * proves absence by two adjacent neighbours; the witness is a receipt (a JWS
 * by the service key) whose payload carries the tree head {size, root}: the
 * signed head the proof is checked against.
 */
import { CATALOG_PRICES } from '../../domain/charge-rules.ts';
import { commitAct } from '../act.ts';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { z } from 'zod';
import { chargeSchema, chargeView } from '../charge.ts';
import { DATA } from '../../catalog/catalogs.ts';
import { actKindSchema, SURFACE_PRESETS } from '../../catalog/surfaces.ts';
import { RECEIPT_TYP } from '../../crypto/receipt.ts';
import { ProofError } from '../../crypto/proof-error.ts';
import { proofFromJson, proofToJson, verifySortedProof, type SortedProofJson } from '../../crypto/sorted-merkle.ts';
import { formatUsd } from '../../catalog/money.ts';
import { manifestsOf } from '../../ledger/astl.ts';
import type { AppContext } from '../context.ts';
import { notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { entitySchema, presetSchema, surfaceTree } from './astl.ts';
import { operation } from '../operation.ts';

/** SKU of a witness; its toll is the absence catalog's witness_toll_usd (not in the Clear tolls list). */
export const WITNESS_SKU = 'absence_witness';
/** The witness toll, as the declaration prices it (its catalog's price). */
const witnessMicros = () => CATALOG_PRICES.absence_witness();

export const witnessRequest = z
  .strictObject({
    act_kind: actKindSchema.describe('the act whose absence from the declared surface is to be witnessed'),
    entity: entitySchema.optional().describe("use the entity's newest ASTL manifest as the declared surface"),
    preset: presetSchema.optional(),
    act_kinds: z.array(actKindSchema).min(1).max(512).optional().describe('a declared surface given inline'),
  })
  .refine((b) => [b.entity, b.preset, b.act_kinds].filter((x) => x !== undefined).length === 1, {
    message: 'send exactly one of entity, preset or act_kinds',
    path: ['entity'],
  });

const witnessJson = z.object({ key: z.string(), index: z.number().int().nonnegative(), hashes: z.array(z.string()) });
export const sortedProofSchema = z.union([
  z.object({ present: z.literal(true), tree_size: z.number().int().nonnegative(), leaf: witnessJson }),
  z.object({
    present: z.literal(false),
    tree_size: z.number().int().nonnegative(),
    left: witnessJson.optional(),
    right: witnessJson.optional(),
  }),
]);
export const witnessVerifyRequest = z.strictObject({
  witness: z.string().min(1).max(8192).describe('the witness JWS as issued'),
  proof: sortedProofSchema.describe('the sorted-Merkle proof as issued (keys are the act kinds as text)'),
});
export const absenceScaleQuery = z.object({
  declared_surface: z.coerce.number().int().min(1).max(1e6).default(8).describe('act kinds on the declared surface'),
  witnesses_per_act: z.coerce.number().int().min(1).max(1e9).default(100).describe('witnesses asked per absent act kind per month'),
});

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

export function registerAbsenceRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/absence/witness',
      auth: 'key',
      tool: 'absence_witness',
      summary:
        'Issue a signed non-membership witness: the act kind is not on the declared surface (sorted Merkle proof against a signed head)',
      tag: 'absence',
      body: witnessRequest,
      response: z.object({
        witness_id: z.string(),
        act_kind: z.string(),
        absent: z.boolean(),
        surface: z.looseObject({}),
        proof: sortedProofSchema,
        witness: z.string(),
        verify_url: z.string(),
        standard_verify_url: z.string(),
        charge: chargeSchema,
      }),
      problems: [404, 409, 422],
      charges: [WITNESS_SKU],
      chargeRules: { [WITNESS_SKU]: { price: 'absence_witness' } },
      example: { act_kind: 'wire', preset: 'hiring' },
      act: { lane: true },
    },
    async ({ input: body, key, event, bill }) => {
      let surface: Record<string, unknown>;
      let kinds: readonly string[];
      if (body.entity) {
        const [m] = await manifestsOf(ctx.ledger.read, body.entity, 1);
        if (!m) throw notFound(`no manifest is published for ${body.entity}`, 'unknown_entity');
        kinds = m.act_kinds;
        surface = { source: 'astl', entity: m.entity, version: m.version, manifest_id: m.manifest_id, astl_index: m.log_index };
      } else if (body.preset) {
        kinds = SURFACE_PRESETS[body.preset]!;
        surface = { source: 'preset', preset: body.preset };
      } else {
        kinds = body.act_kinds!;
        surface = { source: 'inline' };
      }
      const tree = surfaceTree(kinds);
      const proof = tree.prove(enc(body.act_kind));
      const head = { tree_size: tree.size, root: Buffer.from(tree.root()).toString('base64') };
      const absent = !proof.present;
      const line = bill(WITNESS_SKU);
      const subject = body.entity ?? (body.preset ? `preset:${body.preset}` : undefined);
      return commitAct(event, ctx, key, {
        decide: (state) => {
          const receipt = state.receipt(
            ctx,
            {
              kind: 'absence_witness',
              decision: absent ? 'ABSENT' : 'PRESENT',
              ...(subject ? { subject } : {}),
              key_id: key.id,
              data: { act_kind: body.act_kind, surface: { ...surface, ...head } },
            },
            { signed: true, charges: [{ keyId: key.id, ...line }] },
          );
          return {
            writes: { receipt },
            reply: reply({
              witness_id: receipt.receipt_id,
              act_kind: body.act_kind,
              absent,
              surface: { ...surface, ...head },
              proof: proofToJson(proof, dec),
              witness: receipt.jws,
              verify_url: receipt.verify_url,
              standard_verify_url: `${ctx.config.SITE_URL}/standards/absence-ledger/verify`,
              charge: chargeView(line),
            }),
          };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/standards/absence-ledger/verify',
      tool: 'absence_verify',
      summary: 'Verify an absence witness: its Ed25519 signature, then its sorted-Merkle proof against the head it signs',
      auth: 'public',
      tag: 'absence',
      body: witnessVerifyRequest,
      response: z.object({
        valid: z.boolean(),
        absent: z.boolean().optional(),
        act_kind: z.string().optional(),
        reason: z.string().optional(),
        detail: z.string().optional(),
      }),
    },
    async ({ input: body }) => {
      return reply(await verifyWitness(ctx, body.witness, body.proof as SortedProofJson), 200, {
        'access-control-allow-origin': '*',
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/absence/scale',
      summary: 'Illustrative projection of absence witness tolls',
      auth: 'public',
      tag: 'absence',
      query: absenceScaleQuery,
    },
    async ({ input: q }) => {
      const witnesses = q.declared_surface * q.witnesses_per_act;
      return reply({
        illustrative: true,
        note: 'Scale examples are illustrative projections and carry no contract.',
        unit: DATA.absence.units.witness,
        declared_surface: q.declared_surface,
        witnesses_per_month: witnesses,
        witness_toll_usd: DATA.absence.witness_toll_usd,
        monthly_usd: formatUsd(BigInt(witnessMicros()) * BigInt(witnesses)),
      });
    },
  );
}

type Verdict =
  | { valid: true; absent: boolean; act_kind: string; surface: unknown; witness_id: string }
  | { valid: false; reason: string; detail: string };

export async function verifyWitness(ctx: AppContext, jws: string, proofJson: SortedProofJson): Promise<Verdict> {
  let header;
  try {
    header = decodeProtectedHeader(jws);
  } catch {
    return { valid: false, reason: 'malformed', detail: 'the witness is not a compact JWS' };
  }
  if (header.alg !== 'EdDSA' || header.typ !== RECEIPT_TYP)
    return { valid: false, reason: 'malformed', detail: 'the witness must be an EdDSA receipt JWS' };
  const pub = typeof header.kid === 'string' ? ctx.keyring.byKid(header.kid) : undefined;
  if (!pub) return { valid: false, reason: 'unknown_kid', detail: 'the witness names no key of this service' };
  let payload: {
    kind?: string;
    decision?: string;
    receipt_id?: string;
    data?: { act_kind?: string; surface?: { tree_size?: number; root?: string } };
  };
  try {
    payload = JSON.parse(dec((await compactVerify(jws, pub.publicKey)).payload));
  } catch {
    return { valid: false, reason: 'bad_signature', detail: 'the witness signature does not verify' };
  }
  const s = payload.data?.surface;
  if (payload.kind !== 'absence_witness' || !payload.data?.act_kind || typeof s?.tree_size !== 'number' || typeof s.root !== 'string') {
    return { valid: false, reason: 'not_a_witness', detail: 'the JWS is not an absence witness' };
  }
  try {
    const present = verifySortedProof(enc(payload.data.act_kind), proofFromJson(proofJson, enc), {
      size: s.tree_size,
      root: new Uint8Array(Buffer.from(s.root, 'base64')),
    });
    if (present !== (payload.decision === 'PRESENT'))
      return { valid: false, reason: 'decision_mismatch', detail: 'the proof contradicts the signed decision' };
    return { valid: true, absent: !present, act_kind: payload.data.act_kind, surface: s, witness_id: payload.receipt_id ?? '' };
  } catch (e) {
    if (e instanceof ProofError) return { valid: false, reason: 'bad_proof', detail: e.message };
    throw e;
  }
}
