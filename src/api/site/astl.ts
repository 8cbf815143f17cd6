/**
 * ASTL, the attempt-surface transparency log (SPEC 2.4, 4.2):
 *   POST /api/v1/astl/publish   key, astl_publish   append a surface manifest (a new version per republish)
 *   GET  /api/v1/astl/lookup    public              an entity's manifests, newest first
 *   POST /api/v1/astl/verify    public              is a manifest in the log: inclusion proof + signed checkpoint
 *   GET  /api/v1/astl/log.json  public              the append-only feed, paged, newest checkpoint included
 *   GET  /api/v1/astl/scale     public              illustrative projection
 */
import { record } from '../../ledger/records.ts';
import { commitAct } from '../act.ts';
import { z } from 'zod';
import { chargeSchema, chargeView } from '../charge.ts';
import { actKindSchema, SURFACE_PRESETS } from '../../catalog/surfaces.ts';
import { tollMicros, tollUsd } from '../../catalog/tolls.ts';
import { leafHash } from '../../crypto/merkle.ts';
import { SortedMerkleTree } from '../../crypto/sorted-merkle.ts';
import { formatUsd } from '../../catalog/money.ts';
import { newSortableId, nowIso } from '../../ids.ts';
import {
  ASTL_LOG,
  ENTITY_HEADS,
  findManifest,
  leafBytes,
  manifestsOf,
  type ManifestLeaf,
  type StoredManifest,
  ASTL_MANIFESTS,
} from '../../ledger/astl.ts';
import { logSize } from '../../ledger/log.ts';
import { ownerId } from '../../ledger/accounts.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { checkpointSchema, feedPage, feedQuery, inclusionSchema, proofAt, provedAtGroupEnd, withCheckpointNote } from './log-answers.ts';
import { base64 as b64 } from '../../crypto/base64.ts';
import { operation } from '../operation.ts';

export const entitySchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/, 'an entity id: letters, digits and . _ : @ / - (1 to 128)')
  .describe('who declares the surface: an agent, a tenant, a product (first publisher owns it)');
export const presetSchema = z
  .enum(Object.keys(SURFACE_PRESETS) as [string, ...string[]])
  .describe('a surface preset of the absence catalog');

export const astlPublishRequest = z
  .strictObject({
    entity: entitySchema,
    act_kinds: z
      .array(actKindSchema)
      .min(1)
      .max(512)
      .optional()
      .describe('the declared attempt surface: every act kind the entity may attempt'),
    preset: presetSchema.optional(),
  })
  .refine((b) => (b.act_kinds === undefined) !== (b.preset === undefined), {
    message: 'send exactly one of act_kinds or preset',
    path: ['act_kinds'],
  });
export const astlLookupQuery = z.object({ entity: entitySchema, limit: z.coerce.number().int().min(1).max(100).default(20) });
export const astlVerifyRequest = z
  .strictObject({
    manifest_id: z
      .string()
      .regex(/^mfst_[A-Za-z0-9_-]{1,64}$/, 'a manifest id such as mfst_…')
      .optional(),
    manifest: z.looseObject({}).optional().describe('the manifest leaf exactly as published (its canonical JSON is the leaf)'),
  })
  .refine((b) => (b.manifest_id === undefined) !== (b.manifest === undefined), {
    message: 'send exactly one of manifest_id or manifest',
    path: ['manifest_id'],
  });
export const astlScaleQuery = z.object({
  entities: z.coerce.number().int().min(1).max(1e9).default(1000),
  versions_per_year: z.coerce.number().int().min(1).max(1e6).default(4),
});

const manifestSchema = z.object({
  type: z.literal('astl.manifest'),
  manifest_id: z.string(),
  entity: z.string(),
  version: z.number().int(),
  act_kinds: z.array(z.string()),
  surface_root: z.string(),
  published_at: z.string(),
});
export const astlPublishResponse = z.object({
  manifest: manifestSchema,
  index: z.number().int(),
  leaf_hash: z.string(),
  inclusion: inclusionSchema,
  checkpoint: checkpointSchema,
  receipt_id: z.string(),
  verify_url: z.string(),
  charge: chargeSchema,
});

/** Surface trees built lately, by their kinds: a preset's or a manifest's tree is asked for again and again. */
const surfaceTrees = new Map<string, SortedMerkleTree>();
const SURFACE_TREES_MAX = 256;

/** The sorted Merkle tree of an act surface (immutable once built, so shared by every request that names the same kinds). */
export function surfaceTree(kinds: readonly string[]): SortedMerkleTree {
  const id = JSON.stringify(kinds);
  let tree = surfaceTrees.get(id);
  if (!tree) {
    tree = new SortedMerkleTree(kinds.map((k) => new TextEncoder().encode(k)));
    if (surfaceTrees.size >= SURFACE_TREES_MAX) surfaceTrees.delete(surfaceTrees.keys().next().value!);
    surfaceTrees.set(id, tree);
  }
  return tree;
}

/** A posted manifest leaf is in the log when the manifest its id names has exactly its leaf hash. */
async function findLeaf(ctx: AppContext, leaf: Record<string, unknown>): Promise<StoredManifest | undefined> {
  if (typeof leaf.manifest_id !== 'string') return undefined;
  const m = await findManifest(ctx.ledger.read, leaf.manifest_id);
  return m && m.leaf_hash === b64(leafHash(leafBytes(leaf))) ? m : undefined;
}

function publicManifest(m: StoredManifest) {
  const { log_index, leaf_hash, receipt_id, ...leaf } = m;
  return { manifest: leaf, index: log_index, leaf_hash, receipt_id };
}

export function registerAstlRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/astl/publish',
      auth: 'key',
      tool: 'astl_publish',
      summary:
        'Publish an attempt-surface manifest to the ASTL before bind; answers its index, leaf hash, inclusion proof and signed checkpoint',
      tag: 'astl',
      body: astlPublishRequest,
      response: astlPublishResponse,
      responses: {
        201: { description: 'Published: its index, leaf hash, inclusion proof and signed checkpoint', schema: astlPublishResponse },
      },
      problems: [403, 409, 422],
      charges: ['astl_publish'],
      example: { entity: 'agent:acme-buyer', preset: 'agentic' },
      act: { after: (r) => withCheckpointNote(ctx, r), lane: true },
    },
    async ({ input: body, key, event, bill }) => {
      const kinds = [...new Set(body.act_kinds ?? SURFACE_PRESETS[body.preset!]!)].sort();
      const manifestId = newSortableId('mfst');
      const surfaceRoot = b64(surfaceTree(kinds).root());
      const line = bill('astl_publish');
      return commitAct(event, ctx, key, {
        needs: { rows: [{ reader: ENTITY_HEADS, key: body.entity }] },
        run: async (_tx, state) => {
          // Owner and version are decided under the write lock only (no read before it to repeat), on
          // the head the group read or the one a publish before this in the group left: two publishes
          // of one entity get consecutive versions, and a refusal writes nothing.
          const head = await state.row(ENTITY_HEADS, body.entity);
          const owner = ownerId(key);
          if (head && head.key_id !== owner) throw entityOwned(body.entity);
          const leaf: ManifestLeaf = {
            type: 'astl.manifest',
            manifest_id: manifestId,
            entity: body.entity,
            version: (head?.version ?? 0) + 1,
            act_kinds: kinds,
            surface_root: surfaceRoot,
            published_at: nowIso(),
          };
          const receipt = state.receipt(
            ctx,
            {
              kind: 'astl_publish',
              decision: 'PUBLISHED',
              subject: body.entity,
              key_id: key.id,
              data: { manifest_id: manifestId, act_kinds: kinds.length, surface_root: surfaceRoot },
            },
            { charges: [{ keyId: key.id, ...line }] },
          );
          const { index, leafHash } = await state.append(ASTL_LOG, leafBytes(leaf));
          const leaf_hash = b64(leafHash);
          state.setRow(ENTITY_HEADS, body.entity, { key_id: owner, version: leaf.version, manifest_id: manifestId });
          const manifest = record(ASTL_MANIFESTS, {
            leaf,
            keyId: owner,
            logIndex: index,
            receiptId: receipt.receipt_id,
            prevId: head?.manifest_id,
          });
          const answer = provedAtGroupEnd(ctx, state, ASTL_LOG, index, (proof) => ({
            manifest: leaf,
            index,
            leaf_hash,
            ...proof,
            receipt_id: receipt.receipt_id,
            verify_url: receipt.verify_url,
            charge: chargeView(line),
          }));
          return { writes: { receipt, records: [manifest] }, reply: reply(answer, 201) };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/astl/lookup',
      tool: 'astl_lookup',
      summary: "An entity's published manifests, newest version first",
      auth: 'public',
      tag: 'astl',
      query: astlLookupQuery,
      response: z.object({
        entity: z.string(),
        latest_version: z.number().int(),
        manifests: z.array(z.object({ manifest: manifestSchema, index: z.number().int(), leaf_hash: z.string(), receipt_id: z.string() })),
      }),
      problems: [404],
    },
    async ({ input: q }) => {
      const found = await manifestsOf(ctx.ledger.read, q.entity, q.limit);
      if (found.length === 0) throw notFound(`no manifest is published for ${q.entity}`, 'unknown_entity');
      return reply({ entity: q.entity, latest_version: found[0]!.version, manifests: found.map(publicManifest) }, 200, {
        'access-control-allow-origin': '*',
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/astl/verify',
      tool: 'astl_verify',
      summary: "Check a manifest's inclusion in the ASTL: inclusion proof against the newest signed checkpoint",
      auth: 'public',
      tag: 'astl',
      body: astlVerifyRequest,
      response: z.object({
        included: z.boolean(),
        reason: z.string().optional(),
        manifest: manifestSchema.optional(),
        inclusion: inclusionSchema.optional(),
        checkpoint: checkpointSchema.optional(),
      }),
      example: { manifest_id: 'mfst_8Kd2Wq7LxN3vT9pRm4sBzA' },
    },
    async ({ input: body }) => {
      const m = body.manifest_id ? await findManifest(ctx.ledger.read, body.manifest_id) : await findLeaf(ctx, body.manifest!);
      if (!m) return reply({ included: false, reason: body.manifest_id ? 'unknown_manifest' : 'leaf_not_in_log' });
      const size = await logSize(ctx.ledger.read, ASTL_LOG);
      const proof = await proofAt(ctx, ctx.ledger.read, ASTL_LOG, m.log_index, size);
      return withCheckpointNote(ctx, reply({ included: true, ...publicManifest(m), ...proof }));
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/astl/log.json',
      summary: 'The public append-only ASTL feed, paged (newest page by default), with the newest signed checkpoint',
      auth: 'public',
      tag: 'astl',
      query: feedQuery,
    },
    async ({ input }) => reply(await feedPage(ctx, ASTL_LOG, input), 200, { 'access-control-allow-origin': '*' }),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/astl/scale',
      summary: 'Illustrative projection of ASTL publish tolls',
      auth: 'public',
      tag: 'astl',
      query: astlScaleQuery,
    },
    async ({ input: q }) => {
      const publishes = q.entities * q.versions_per_year;
      return reply({
        illustrative: true,
        note: 'Scale examples are illustrative projections and carry no contract.',
        unit: 'publishes = entities x versions_per_year',
        entities: q.entities,
        versions_per_year: q.versions_per_year,
        publishes_per_year: publishes,
        publish_toll_usd: tollUsd('astl_publish'),
        annual_usd: formatUsd(BigInt(tollMicros('astl_publish')) * BigInt(publishes)),
      });
    },
  );
}

function entityOwned(entity: string): Problem {
  return new Problem({
    status: 403,
    code: 'entity_owned',
    title: 'Forbidden',
    detail: `${entity} is published by another key; only its first publisher may add versions`,
  });
}
