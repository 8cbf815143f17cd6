/**
 * Opening the commitments of a public receipt (docs/public-log.md):
 *   GET /v1/receipts/:receipt_id/openings   key   the plaintext behind each commitment, with its salt
 * Only the receipt's account reads them; it may hand one opening to a third
 * party, who checks it against the public entry without trusting this service.
 */
import { z } from 'zod';
import { COMMITMENT_PREFIX, commitmentOf } from '../../crypto/commitment.ts';
import { getApiKey } from '../../ledger/api-keys.ts';
import { getReceipt } from '../../ledger/receipts.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { openingsOf } from '../../ledger/commitments.ts';
import type { AppContext } from '../context.ts';
import { badRequest, notFound } from '../problem.ts';
import { reply, toResponse } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

const receiptId = z.string().regex(/^rcpt_[A-Za-z0-9_-]{1,80}$/, 'a receipt id such as rcpt_…');

export const HOW_TO_CHECK = `SHA-256(base64url-decoded salt || UTF-8 of the canonical JSON of value), base64url without padding, prefixed "${COMMITMENT_PREFIX}", equals the commitment at field in the receipt's public payload (GET /api/v1/logs/receipts/entries or the receipt's verify_url).`;

export function registerCommitmentRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/receipts/:receipt_id/openings',
      summary: "The plaintext behind the commitments of one of the account's public receipts, with the salts that open them",
      auth: 'key',
      tag: 'system',
      problems: [404],
    },
    async ({ key, params }) => {
      const id = receiptId.safeParse(params.receipt_id);
      if (!id.success)
        throw badRequest('invalid_path', `receipt_id: ${id.error.issues[0]!.message}`, {
          errors: [{ field: 'receipt_id', message: id.error.issues[0]!.message }],
        });
      // Another account's receipt is answered like one without commitments: 404, not 403.
      const none = () => notFound(`no commitments of receipt ${id.data} in this account`, 'no_openings');
      const receipt = await getReceipt(ctx.ledger.read, id.data);
      const owner = receipt?.payload.key_id ? await getApiKey(ctx.ledger.read, receipt.payload.key_id) : undefined;
      if (!receipt || !owner || ownerId(owner) !== ownerId(key)) throw none();
      const rows = await openingsOf(ctx.ledger.read, receipt);
      if (rows.length === 0) throw none();
      return toResponse(
        reply({
          object: 'receipt_openings',
          receipt_id: id.data,
          openings: rows.map((o) => ({ field: o.field, commitment: commitmentOf(o), value: o.value, salt: o.salt })),
          how_to_check: HOW_TO_CHECK,
        }),
        { 'cache-control': 'private, no-store' },
      );
    },
  );
}
