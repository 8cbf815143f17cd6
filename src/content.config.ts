/**
 * Content collections: every fact of the catalogs, the gate's discovery
 * documents and landing pages, validated at build time by the same zod schemas
 * the API imports (src/catalog/schemas.ts). A wrong number fails the build.
 */
import { defineCollection } from 'astro:content';
import { file, glob } from 'astro/loaders';
import { z } from 'zod';
import * as s from './catalog/schemas.ts';

/** Each file under src/content/catalogs/ is one catalog's facts; `schema` says which. */
const catalogData = z.discriminatedUnion('schema', [
  s.clearDataSchema,
  s.napDataSchema,
  s.clearingDataSchema,
  s.relayDataSchema,
  s.signalDataSchema,
  s.ornDataSchema,
  s.absenceDataSchema,
  s.pdtrDataSchema,
  s.requireReceiptDataSchema,
  s.issuerPaysDataSchema,
  s.astlDataSchema,
  s.stackDataSchema,
  s.foundryDataSchema,
  s.gamCreditsDataSchema,
  s.scoreboardDataSchema,
  s.agentActionsDataSchema,
  s.x402DataSchema,
  s.x402BazaarDataSchema,
]);

const withId = (key: string) => (text: string) =>
  (JSON.parse(text) as Record<string, unknown>[]).map((row) => ({ id: String(row[key]), ...row }));

export const collections = {
  catalogs: defineCollection({ loader: glob({ pattern: '*.json', base: './src/content/catalogs' }), schema: catalogData }),
  tolls: defineCollection({
    loader: file('src/content/tolls.json', { parser: withId('sku') }),
    schema: s.tollSchema.extend({ id: z.string() }),
  }),
  discovery: defineCollection({ loader: file('src/content/discovery.json'), schema: s.discoveryDataSchema }),
  gatePages: defineCollection({ loader: file('src/content/gate-pages.json'), schema: s.gatePageSchema }),
  // Every docs/*.md file, one page each at /docs/<file name> (src/site/docs.ts).
  docs: defineCollection({ loader: glob({ pattern: '*.md', base: './docs', generateId: ({ entry }) => entry.replace(/\.md$/, '') }) }),
  surfacePresets: defineCollection({
    loader: file('src/content/surface-presets.json', {
      parser: (text) => Object.entries(JSON.parse(text) as Record<string, string[]>).map(([id, kinds]) => ({ id, kinds })),
    }),
    schema: z.strictObject({ id: z.string(), kinds: z.array(z.string().regex(/^[a-z0-9_]+$/)).min(1) }),
  }),
};
