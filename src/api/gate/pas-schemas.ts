/**
 * The PAS operations' requests and answers (src/api/gate/pas.ts declares the
 * operations with them; pas-governed.ts decides them).
 */
import { z } from 'zod';
import { DRILL_FUSES } from '../../ledger/fuses.ts';
import { chargeSchema } from '../charge.ts';
import { fuseIdSchema } from './governed.ts';
import { reviewIdField } from './reviews.ts';

const identifier = (what: string) => z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, `${what}: 1 to 128 characters of A-Z a-z 0-9 . _ : -`);
export const licenseIdSchema = identifier('a licence id').describe('licence parent id, chosen by the caller (create-free)');
const jobIdSchema = identifier('a job id').describe('the job (submission, policy or bind job) identifier of the caller');
const fingerprintSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, '64 lowercase hex characters (SHA-256)')
  .describe('SHA-256 (lowercase hex) of the canonical JSON of the write the caller will forward');
const writeSchema = z
  .record(z.string(), z.unknown())
  .describe('the write the caller will forward (a JSON object); its spend fingerprint is SHA-256 of its canonical JSON');
const exactlyOneWrite = (b: { write?: unknown; spend_fingerprint?: unknown }) =>
  (b.write === undefined) !== (b.spend_fingerprint === undefined);
const oneWriteMessage = { message: 'send exactly one of write or spend_fingerprint', path: ['spend_fingerprint'] };

export const preBindARequest = z
  .strictObject({
    fuse_id: fuseIdSchema,
    license_id: licenseIdSchema,
    job_id: jobIdSchema,
    write: writeSchema.optional(),
    spend_fingerprint: fingerprintSchema.optional(),
    scope: z.enum(['bind_only', 'bind_and_issue']).default('bind_only').describe('asked scope; bind_and_issue is never granted'),
    review_id: reviewIdField,
  })
  .refine(exactlyOneWrite, oneWriteMessage);

export const redeemRequest = z
  .strictObject({
    ticket_id: z.string().regex(/^bt_[A-Za-z0-9_-]{1,64}$/, 'a bind ticket id such as bt_…'),
    write: writeSchema.optional(),
    spend_fingerprint: fingerprintSchema.optional(),
    now: z.iso.datetime({ offset: false }).describe("the caller's UTC now (RFC 3339, Z); command radiation: a redeem must present it"),
  })
  .refine(exactlyOneWrite, oneWriteMessage);

export const bindCheckRequest = z.strictObject({ fuse_id: fuseIdSchema, job_id: jobIdSchema });
export const jobQuery = z.object({ job_id: jobIdSchema });
export const preBindBRequest = z.strictObject({ fuse_id: fuseIdSchema, license_id: licenseIdSchema, job_id: jobIdSchema });
export const usdAmount = z
  .string()
  .regex(/^\d{1,9}(\.\d{1,6})?$/, 'a decimal USD amount such as "12500.00" (at most 9 digits before the point and 6 after)')
  .describe('premium in USD, a decimal string');
export const authorityRequest = z.strictObject({
  fuse_id: fuseIdSchema,
  grant_id: z
    .string()
    .regex(/^auth_[A-Za-z0-9_-]{1,64}$/, 'an authority grant id such as auth_…')
    .describe('the grant, created with `pas grants create`'),
  premium: usdAmount,
  line: z.string().regex(/^[a-z0-9_]{1,64}$/, 'a line of business such as "cyber"'),
  state: z.string().regex(/^[A-Z]{2}$/, 'a two-letter state code such as "CA"'),
  job_id: jobIdSchema.optional(),
});
export const demoBindCheckRequest = z.strictObject({
  fuse_id: fuseIdSchema.default(DRILL_FUSES.live),
  job_id: jobIdSchema.default('job_demo'),
});
export const demoPreBindARequest = z
  .strictObject({
    fuse_id: fuseIdSchema.default(DRILL_FUSES.live),
    license_id: licenseIdSchema.default('lic_drill_live'),
    job_id: jobIdSchema.default('job_demo'),
    write: writeSchema.optional(),
    spend_fingerprint: fingerprintSchema.optional(),
    scope: z.enum(['bind_only', 'bind_and_issue']).default('bind_only'),
  })
  .refine((b) => !(b.write !== undefined && b.spend_fingerprint !== undefined), oneWriteMessage);
/** Every field has a default (docs/policy-administration.md): `{}` checks a premium within the drill grant. */
export const demoAuthorityRequest = authorityRequest.extend({
  fuse_id: fuseIdSchema.default(DRILL_FUSES.live),
  grant_id: z
    .string()
    .regex(/^auth_[A-Za-z0-9_-]{1,64}$/)
    .default('auth_drill'),
  premium: usdAmount.default('100000.00'),
  line: authorityRequest.shape.line.default('cyber'),
  state: authorityRequest.shape.state.default('CA'),
});

export const receiptFields = { receipt_id: z.string(), verify_url: z.url() };
export const decisionResponse = z.looseObject({
  decision: z.string(),
  reason: z.string(),
  ...receiptFields,
  charge: chargeSchema
    .nullable()
    .describe('what this decision charged the key: execute_gate for ALLOW, the NAP hold for a refusal; null for a public demo'),
});
export const snapshotResponse = z.looseObject({
  object: z.literal('license'),
  license_id: z.string(),
  state: z.enum(['UNSIGNED', 'LIVE', 'ARMED', 'DEAD']),
  charged: z.boolean(),
  children: z.object({
    issued: z.number(),
    outstanding: z.number(),
    redeemed: z.number(),
    expired_unredeemed: z.number(),
    superseded: z.number(),
  }),
  history: z.array(z.object({ from: z.string(), to: z.string(), at: z.string(), receipt_id: z.string() })),
});
export const transitionResponse = z.looseObject({
  license_id: z.string(),
  previous_state: z.string(),
  state: z.string(),
  ...receiptFields,
});
export const exclusionResponse = z.looseObject({
  job_id: z.string(),
  present: z.boolean(),
  excluded: z.boolean(),
  proof: z.unknown(),
  checkpoint: z.object({ origin: z.string(), tree_size: z.number(), root_hash: z.string(), note: z.string() }),
  verifier_key: z.string(),
});
export const appendixResponse = z.looseObject({
  object: z.literal('bind_appendix'),
  job_id: z.string(),
  verify_url: z.url(),
  receipts: z.array(z.unknown()),
  notice: z.string(),
});
