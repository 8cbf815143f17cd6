/**
 * Act kinds: the absence catalog's surface presets (lists of act kinds, from
 * src/content/surface-presets.json), the default surface they make, the one
 * rule for how a kind is spelled, and the sentence every door says it with
 * (/start, the dashboard guide, the OpenAPI description, the MCP tools).
 */
import { z } from 'zod';
import { surfacePresetsSchema } from './schemas.ts';
import presets from '../content/surface-presets.json' with { type: 'json' };

export const SURFACE_PRESETS: Readonly<Record<string, readonly string[]>> = surfacePresetsSchema.parse(presets);

/** Every preset's act kinds, in catalog order: what a key may name until an operator declares its own. */
export const DEFAULT_ACT_KINDS: readonly string[] = [...new Set(Object.values(SURFACE_PRESETS).flat())];

/** How an act kind is spelled, as every page says it. */
export const ACT_KIND_RULE = 'letters, digits and _, read in lower case ("Write" is "write")';

/** An act kind. One rule for case everywhere: read in lower case, so "Write" is "write" (not a free 400 beside a paid BLOCK). */
export const actKindSchema = z
  .string()
  .regex(/^[A-Za-z0-9_]{1,64}$/, 'an act kind such as "pay" (letters, digits, _; read in lower case)')
  .transform((k) => k.toLowerCase());

/** The presets' names, as a sentence ("agentic, hiring and insurance"). */
export const presetNames = (): string => {
  const names = Object.keys(SURFACE_PRESETS);
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? '');
};

/** What a hop's act kind may be, in plain text: the OpenAPI description and the MCP tools' descriptions. */
export const ACT_KINDS_TEXT =
  `The act kind is ${ACT_KIND_RULE}. A key may name, by default, any kind of the presets ${presetNames()}: ${DEFAULT_ACT_KINDS.join(', ')} (or none). ` +
  'An operator may declare the kinds of a key instead (POST /v1/keys/{id}/surface); then a hop must name one of them. A kind outside the surface is refused: BLOCK, with the kinds in `surface`.';
