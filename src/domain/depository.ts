/**
 * Depository attestation (SPEC 2.5, 6): the five event types on a tokenized
 * twin, and its custody parity. Pure: no I/O.
 *
 * Parity: the units held in custody backing the twin equal its token supply,
 * before and after every event.
 *
 *   tokenize          custody-held units become on-chain: custody += n, supply += n
 *                     (creates the twin, or converts more units of it)
 *   mint              new units against a custody record: custody += n, supply += n
 *   burn              units burned, traditional form restored: custody -= n, supply -= n
 *                     (refused beyond the supply)
 *   corporate_action  dividend or governance: no unit change; split by an integer
 *                     ratio: both x ratio
 *   custody_transfer  beneficial ownership moves to another custodian: units unchanged
 *                     (refused when from_custodian is not the current one)
 *
 * An event may carry the custodian's own statement of its custody units after
 * the event (`attested_custody_units`); a statement that breaks parity is refused.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../crypto/canonical.ts';

export const EVENT_TYPES = ['tokenize', 'mint', 'burn', 'corporate_action', 'custody_transfer'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface Twin {
  custody_units: number;
  token_supply: number;
  custodian: string | null;
  seq: number;
  chain_hash: string;
}

export interface DepositoryEvent {
  event_type: EventType;
  units?: number | undefined;
  custody_ref?: string | undefined;
  action?: 'dividend' | 'split' | 'governance' | undefined;
  split_ratio?: number | undefined;
  from_custodian?: string | undefined;
  to_custodian?: string | undefined;
  attested_custody_units?: number | undefined;
}

export class DepositoryRefusal extends Error {
  readonly code: string;
  constructor(code: string, detail: string) {
    super(detail);
    this.code = code;
  }
}

/** Hash-chain genesis: 32 zero bytes, hex. */
export const GENESIS = '0'.repeat(64);

/**
 * The chain rule of the links made since issue 45 (a receipt's `data.chain_rule`): each link hashes
 * the event as its public receipt shows it, the caller's text (asset id, custodians, custody ref)
 * as commitments, so anyone can recompute the chain from the public log and nobody can test a
 * guess of that text against it. Links of receipts without `chain_rule` hashed the request as sent.
 */
export const CHAIN_RULE = {
  id: 'depository-chain-v2',
  text: "chain_n = SHA-256(chain_{n-1} || SHA-256(canonical JSON of the receipt's data.event, caller text committed, with its seq)), chain_0 = 32 zero bytes",
} as const;

/** chain_n = SHA-256(chain_{n-1} || SHA-256(canonical JSON of `record`)), hex: `record` is event n with its seq. */
export function chainHash(prev: string, record: unknown): string {
  const inner = createHash('sha256').update(canonicalJson(record)).digest();
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(prev, 'hex'), inner]))
    .digest('hex');
}

function safe(n: number, what: string): number {
  if (!Number.isSafeInteger(n)) throw new DepositoryRefusal('units_overflow', `${what} would exceed 2^53 - 1 units`);
  return n;
}

/** The twin after `ev`; throws DepositoryRefusal when the event is not allowed. */
export function applyEvent(before: Twin | undefined, ev: DepositoryEvent): Omit<Twin, 'seq' | 'chain_hash'> {
  if (!before && ev.event_type !== 'tokenize')
    throw new DepositoryRefusal('unknown_asset', 'the asset has no tokenized twin yet: tokenize it first');
  const b = before ?? { custody_units: 0, token_supply: 0, custodian: null };
  let after: Omit<Twin, 'seq' | 'chain_hash'>;
  const n = ev.units ?? 0;
  switch (ev.event_type) {
    case 'tokenize':
    case 'mint':
      after = {
        ...b,
        custody_units: safe(b.custody_units + n, 'custody'),
        token_supply: safe(b.token_supply + n, 'supply'),
        custodian: ev.to_custodian ?? b.custodian,
      };
      break;
    case 'burn':
      if (n > b.token_supply) throw new DepositoryRefusal('insufficient_supply', `cannot burn ${n} units: the supply is ${b.token_supply}`);
      after = { ...b, custody_units: b.custody_units - n, token_supply: b.token_supply - n };
      break;
    case 'corporate_action': {
      const r = ev.action === 'split' ? (ev.split_ratio ?? 1) : 1;
      after = { ...b, custody_units: safe(b.custody_units * r, 'custody'), token_supply: safe(b.token_supply * r, 'supply') };
      break;
    }
    case 'custody_transfer':
      if (ev.from_custodian !== undefined && ev.from_custodian !== b.custodian) {
        throw new DepositoryRefusal('custodian_mismatch', `the current custodian is ${String(b.custodian)}, not ${ev.from_custodian}`);
      }
      after = { ...b, custodian: ev.to_custodian ?? null };
      break;
  }
  if (after.custody_units !== after.token_supply)
    throw new DepositoryRefusal('parity_violation', 'custody units and token supply would differ');
  if (ev.attested_custody_units !== undefined && ev.attested_custody_units !== after.custody_units) {
    throw new DepositoryRefusal(
      'parity_violation',
      `the custodian attests ${ev.attested_custody_units} units in custody, but the token supply after this ${ev.event_type} is ${after.token_supply}`,
    );
  }
  return after;
}
