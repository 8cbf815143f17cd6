/**
 * The deterministic classifier of POST /v1/classify. Rules are data
 * (src/content/classify-rules.json); no model is involved. Pure.
 *
 * An action's `kind` is taken as is when it is a known act kind. A text is
 * matched against each act kind's keywords as whole words, case-insensitively;
 * the longest matching keyword wins, ties going to the earlier act kind. The
 * preset is the first surface preset (catalog order) that lists the act kind.
 */
import { z } from 'zod';
import { SURFACE_PRESETS } from '../catalog/surfaces.ts';
import rulesJson from '../content/classify-rules.json' with { type: 'json' };

const rulesSchema = z.strictObject({
  irreversible: z.array(z.string()),
  keywords: z.record(z.string(), z.array(z.string().min(1)).min(1)),
});
const RULES = rulesSchema.parse(rulesJson);

export interface Classification {
  act_kind: string | null;
  preset: string | null;
  irreversible: boolean;
  rule: 'action_kind' | 'keyword' | 'no_match';
  matched: string | null;
}

function presetOf(kind: string): string | null {
  return Object.entries(SURFACE_PRESETS).find(([, kinds]) => kinds.includes(kind))?.[0] ?? null;
}

function result(kind: string, rule: Classification['rule'], matched: string): Classification {
  return { act_kind: kind, preset: presetOf(kind), irreversible: RULES.irreversible.includes(kind), rule, matched };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function classify(input: { action?: { kind: string } | undefined; text?: string | undefined }): Classification {
  const kind = input.action?.kind;
  if (kind !== undefined && (kind in RULES.keywords || presetOf(kind) !== null)) return result(kind, 'action_kind', kind);
  const text = (input.text ?? kind ?? '').toLowerCase();
  let best: { kind: string; keyword: string } | undefined;
  for (const [k, words] of Object.entries(RULES.keywords)) {
    for (const w of words) {
      if (new RegExp(`(^|\\W)${escape(w)}(\\W|$)`).test(text) && (!best || w.length > best.keyword.length)) {
        best = { kind: k, keyword: w };
      }
    }
  }
  if (best) return result(best.kind, 'keyword', best.keyword);
  return { act_kind: null, preset: null, irreversible: false, rule: 'no_match', matched: null };
}
