/**
 * The proxy's map of tool names to what the gate is asked about them (the
 * `--kinds FILE` of `fusegate proxy`, docs/agents-behind-a-fuse.md). One JSON
 * object, keyed by the upstream's tool names:
 *
 *   "send_email": "send_email"                 a hop with this act kind
 *   "search_docs": null                        a hop on the fuse alone (no kind, no classify)
 *   "pay_invoice": { "rail": "x402",           the pre-finality evaluate, its transfer read
 *     "transfer": { "amount": "amount",         from the call's arguments (a name, or a dotted
 *                   "counterparty": "payee.id",  path into them) or fixed ({"value": ...}),
 *                   "currency": { "value": "USDC" } },
 *     "mandate": { "max_amount": "500.00" } }   and an optional mandate
 *
 * A tool not in the file is classified (POST /v1/classify) on its name and
 * description. A file that does not parse stops the proxy before it serves.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { actionSchema } from '../api/gate/governed.ts';
import { mandateSchema, RAILS, TRANSFER_FIELDS, type Mandate, type Rail, type Transfer } from '../domain/prefinality.ts';

const source = z.union([
  z.string().min(1).describe('the name of an argument, or a dotted path into them'),
  z.strictObject({ value: z.string() }),
]);

const ruleSchema = z.union([
  actionSchema.shape.kind,
  z.null(),
  z.strictObject({ kind: actionSchema.shape.kind }),
  z.strictObject({ rail: z.enum(RAILS), transfer: z.partialRecord(z.enum(TRANSFER_FIELDS), source), mandate: mandateSchema.optional() }),
]);

const fileSchema = z.record(z.string().min(1), ruleSchema);

type Source = z.infer<typeof source>;

/** What the proxy asks the gate about one tool. */
export type ToolRule =
  | { kind: string | undefined }
  | { rail: Rail; transfer: Partial<Record<(typeof TRANSFER_FIELDS)[number], Source>>; mandate: Mandate | undefined };

export class KindsFileError extends Error {
  override name = 'KindsFileError';
}

/** The rules of a kinds file, by tool name; throws KindsFileError naming the tool and the field at fault. */
export function readKindsFile(path: string): Map<string, ToolRule> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new KindsFileError(`cannot read the kinds file ${path}: ${(e as Error).message}`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new KindsFileError(`the kinds file ${path} is not valid at ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  return new Map(
    Object.entries(parsed.data).map(([tool, r]): [string, ToolRule] => [
      tool,
      r === null
        ? { kind: undefined }
        : typeof r === 'string'
          ? { kind: r }
          : 'rail' in r
            ? { rail: r.rail, transfer: r.transfer, mandate: r.mandate }
            : { kind: r.kind },
    ]),
  );
}

/** The value at a dotted path of the call's arguments. */
function at(args: Record<string, unknown>, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((node, key) => (node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined), args);
}

/**
 * The transfer a call pays, read from its arguments. A value that is neither
 * a string nor a number is left out: the evaluate then refuses the transfer as
 * incomplete, it does not guess.
 */
export function transferOf(rule: Extract<ToolRule, { rail: Rail }>, args: Record<string, unknown>): Transfer {
  const transfer: Record<string, string> = {};
  for (const [field, src] of Object.entries(rule.transfer)) {
    const v = typeof src === 'string' ? at(args, src) : src!.value;
    if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) transfer[field] = String(v);
  }
  return transfer as Transfer;
}
