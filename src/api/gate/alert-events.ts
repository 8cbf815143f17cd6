/**
 * The alert events of a fuse and of a review (docs/alerts.md): declared among an act's writes
 * as records, so that their webhook deliveries commit with the act.
 */
import type { HopOutcome } from '../../domain/fuse.ts';
import { newId, nowIso } from '../../ids.ts';
import type { Fuse, FuseState } from '../../ledger/fuses.ts';
import { type ActRecord, record } from '../../ledger/records.ts';
import type { Receipt } from '../../ledger/receipts.ts';
import { type AlertEventType, ALERT_DELIVERIES } from '../../ledger/webhooks.ts';

/** The webhook deliveries of a fuse's state change (blown, charged), declared among the act's writes. */
export function fuseChangedAlert(owner: string, after: Fuse, from: FuseState, receipt: Receipt, keyId: string): ActRecord {
  return alertRecord(owner, 'fuse.state_changed', after.id, after.updated_at, {
    from,
    to: after.state,
    key_id: keyId,
    receipt_id: receipt.receipt_id,
    verify_url: receipt.verify_url,
  });
}

/** The webhook deliveries of a refused hop (DENY, BLOCK or SILENCE), declared among the act's writes. */
export function hopDeniedAlert(
  owner: string,
  keyId: string,
  fuse: Fuse,
  outcome: HopOutcome,
  receipt: Receipt,
  actKind: string | undefined,
  tool: string | undefined,
): ActRecord {
  return alertRecord(owner, 'hop.denied', fuse.id, nowIso(), {
    decision: outcome.decision,
    reason: outcome.reason,
    state: fuse.state,
    ...(actKind ? { act_kind: actKind } : {}),
    ...(tool ? { tool } : {}),
    key_id: keyId,
    receipt_id: receipt.receipt_id,
    verify_url: receipt.verify_url,
  });
}

/** The webhook deliveries of a review's step (opened, decided, expired), declared among its act's writes; `fuseId` when the held request named one. */
export function reviewAlert(
  owner: string,
  type: 'review.opened' | 'review.decided' | 'review.expired',
  fuseId: string | null,
  data: Record<string, unknown>,
): ActRecord {
  return alertRecord(owner, type, fuseId, nowIso(), data);
}

function alertRecord(owner: string, type: AlertEventType, fuseId: string | null, at: string, data: Record<string, unknown>): ActRecord {
  const event_id = newId('evt');
  return record(ALERT_DELIVERIES, { owner, event_id, type, fuse_id: fuseId, body: { event_id, type, at, fuse_id: fuseId, data } });
}
