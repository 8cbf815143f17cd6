/**
 * JSON Schema (draft 2020-12) of every catalog schema id, generated from the
 * zod schemas with `z.toJSONSchema`, published at /schemas/<id>.json.
 */
import { z } from 'zod';
import { CATALOGS, type Urls } from './catalogs.ts';

/** Every schema id the site publishes a JSON Schema for. */
export const SCHEMA_IDS: readonly string[] = CATALOGS.map((c) => c.schemaId);

export function jsonSchemaOf(id: string, u: Urls): Record<string, unknown> {
  const c = CATALOGS.find((e) => e.schemaId === id);
  if (!c) throw new Error(`no catalog has schema ${id}`);
  return {
    ...z.toJSONSchema(c.schema, { target: 'draft-2020-12', io: 'output' }),
    $id: `${u.site}/schemas/${id}.json`,
    title: id,
    description: `The catalog published at ${u.site}${c.path}.`,
  };
}
