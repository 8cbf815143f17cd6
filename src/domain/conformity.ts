/**
 * Conformity packs (SPEC 2.5, foundry layer 5): for one of the catalog's six
 * categories, the AI Act pack a provider or deployer starts from: the Annex III
 * category, the Art 12 record-keeping envelope, the category's risk controls
 * (each evidenced or open), and the scaffold of the technical file. Pure.
 *
 * SPEC gives only the categories and their risk controls; the legal references
 * and the envelope's fields are ours, as data in src/content/conformity-packs.json.
 */
import { z } from 'zod';
import { DATA } from '../catalog/catalogs.ts';
import { fingerprint } from '../crypto/canonical.ts';
import packsJson from '../content/conformity-packs.json' with { type: 'json' };

const text = z.string().min(1);
const packRulesSchema = z.strictObject({
  format: text,
  regulation: text,
  categories: z.record(z.string(), z.strictObject({ annex_iii: text.nullable(), high_risk: z.boolean(), note: text.optional() })),
  article_12: z.strictObject({
    basis: text,
    record_fields: z.array(z.strictObject({ field: text, meaning: text })).min(1),
    retention_min_months: z.number().int().positive(),
    retention_basis: text,
  }),
  conformity_assessment: text,
  scaffold: z.array(z.strictObject({ section: text, basis: text })).min(1),
});
const RULES = packRulesSchema.parse(packsJson);

export const CATEGORY_IDS = DATA.foundry.conformity_categories.map((c) => c.category_id) as [string, ...string[]];
for (const id of CATEGORY_IDS) {
  if (!RULES.categories[id]) throw new Error(`conformity-packs.json has no entry for the catalog category ${id}`);
}

export class ConformityRefusal extends Error {
  override name = 'ConformityRefusal';
  readonly code = 'unknown_control';
}

export interface PackInput {
  category_id: string;
  system: { name: string; version: string; provider: string; intended_purpose: string };
  deployer?: string | undefined;
  /** Risk control -> a reference to its evidence (a document id, a hash, a receipt id). */
  evidence?: Record<string, string> | undefined;
  generated_at: string;
  /** Where the Art 12 records are sealed: the receipts log and its checkpoint. */
  log: { entries_url: string; checkpoint_url: string };
}

export function buildPack(input: PackInput) {
  const cat = DATA.foundry.conformity_categories.find((c) => c.category_id === input.category_id)!;
  const rule = RULES.categories[input.category_id]!;
  const evidence = input.evidence ?? {};
  const unknown = Object.keys(evidence).filter((c) => !cat.risk_controls.includes(c));
  if (unknown.length > 0) {
    throw new ConformityRefusal(
      `not a risk control of ${cat.category_id}: ${unknown.join(', ')}; its controls are ${cat.risk_controls.join(', ')}`,
    );
  }
  const risk_controls = cat.risk_controls.map((control) =>
    evidence[control] !== undefined
      ? { control, status: 'evidenced' as const, evidence: evidence[control] }
      : { control, status: 'open' as const, evidence: null },
  );
  return {
    format: RULES.format,
    regulation: RULES.regulation,
    generated_at: input.generated_at,
    category: {
      category_id: cat.category_id,
      label: cat.label,
      annex_iii: rule.annex_iii,
      high_risk: rule.high_risk,
      ...(rule.note ? { note: rule.note } : {}),
    },
    system: input.system,
    deployer: input.deployer ?? null,
    article_12_envelope: {
      label: cat.article_12,
      basis: RULES.article_12.basis,
      record_fields: RULES.article_12.record_fields,
      retention_min_months: RULES.article_12.retention_min_months,
      retention_basis: RULES.article_12.retention_basis,
      sealed_in: input.log,
    },
    risk_controls,
    open_controls: risk_controls.filter((c) => c.status === 'open').length,
    conformity_assessment: rule.high_risk ? RULES.conformity_assessment : null,
    notified_body_scaffold: RULES.scaffold.map((s) => ({ ...s, status: 'to_complete' as const })),
  };
}

export type Pack = ReturnType<typeof buildPack>;

/** The seal of a pack: SHA-256 (hex) of its canonical JSON. */
export const packHash = (pack: Pack): string => fingerprint(pack);
