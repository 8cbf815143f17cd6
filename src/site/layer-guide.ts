/**
 * What a layer page tells a person: the layer's purpose (src/content/layer-guides.json),
 * its prices read from its own catalog, and its endpoints with a request and a
 * response example drawn from the OpenAPI description, which is generated from
 * the routes' zod schemas (src/generated/openapi.json): one source for both.
 */
import { z } from 'zod';
import guides from '../content/layer-guides.json' with { type: 'json' };
import openapi from '../generated/openapi.json' with { type: 'json' };
import recorded from '../content/recorded-examples.json' with { type: 'json' };
import { TOLLS } from '../catalog/tolls.ts';
import { TOLL_LABELS, idWords } from '../catalog/pricing-table.ts';
import { exampleNumber, exampleOpenObject, exampleString, filledIn } from './example-values.ts';

const guideSchema = z.strictObject({
  purpose: z.string().min(1),
  who: z.string().optional(),
  paths: z.array(z.string().startsWith('/')).min(1),
  live: z.enum(['clearing', 'settlements']).optional(),
});
const GUIDES = z.strictObject({ stack: z.record(z.string(), guideSchema), foundry: z.record(z.string(), guideSchema) }).parse(guides);
export type Guide = z.infer<typeof guideSchema>;

export function guideOf(kind: 'stack' | 'foundry', id: string): Guide {
  const g = GUIDES[kind][id];
  if (!g) throw new Error(`no ${kind} layer guide for ${id} in src/content/layer-guides.json`);
  return g;
}

type Json = Record<string, any>;
const doc = openapi as Json;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

export interface EndpointGuide {
  method: string;
  path: string;
  summary: string;
  keyed: boolean;
  request?: string;
  status: string;
  response?: string;
}

function deref(s: Json | undefined): Json | undefined {
  if (s && typeof s.$ref === 'string') {
    const target = (s.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: Json | undefined, k) => o?.[k], doc);
    return deref(target);
  }
  return s;
}

/**
 * An instance of a JSON schema: its own example, default, const or first enum
 * value, else a realistic value for the field `key` (src/site/example-values.ts).
 */
export function exampleOf(schema: Json | undefined, depth = 0, key = ''): unknown {
  const s = deref(schema);
  if (!s || depth > 6) return null;
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum)) return s.enum[0];
  const alt = s.anyOf ?? s.oneOf;
  if (Array.isArray(alt)) return exampleOf(alt.find((a: Json) => a.type !== 'null') ?? alt[0], depth + 1, key);
  if (Array.isArray(s.allOf)) return Object.assign({}, ...s.allOf.map((a: Json) => exampleOf(a, depth + 1, key)));
  switch (Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type) {
    case 'object': {
      const props = Object.entries((s.properties ?? {}) as Record<string, Json>);
      if (props.length === 0) {
        const extra = deref(s.additionalProperties);
        return extra && extra.type ? { [`${key || 'item'}_1`]: exampleOf(extra, depth + 1, key) } : exampleOpenObject(key);
      }
      return Object.fromEntries(props.map(([k, v]) => [k, exampleOf(v, depth + 1, k)]));
    }
    case 'array':
      return [exampleOf(s.items, depth + 1, key.replace(/(sh|ch|x|s)es$/, '$1').replace(/s$/, ''))];
    case 'integer':
    case 'number':
      return exampleNumber(s, key);
    case 'boolean':
      return true;
    case 'string':
      return exampleString(s, key);
    default:
      return exampleOpenObject(key);
  }
}

const pretty = (v: unknown) => JSON.stringify(v, null, 2);

/** The operations under `paths` (prefixes), in OpenAPI order, with examples. */
export function endpointsUnder(prefixes: string[]): EndpointGuide[] {
  const out: EndpointGuide[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths as Record<string, Json>)) {
    if (!prefixes.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p || path.startsWith(p + '/')))) continue;
    for (const m of METHODS.filter((x) => byMethod[x])) {
      const op = byMethod[m] as Json;
      const body = op.requestBody?.content?.['application/json'];
      const query = ((op.parameters ?? []) as Json[]).filter((p) => p.in === 'query' && p.required);
      const [status, res] = Object.entries((op.responses ?? {}) as Record<string, Json>).find(([st]) => st.startsWith('2')) ?? [
        '200',
        undefined,
      ];
      const content = deref(res)?.content ?? {};
      const media = content['application/json'] ?? Object.values(content)[0];
      const request = body
        ? pretty(body.example !== undefined ? filledIn(body.example) : exampleOf(body.schema))
        : query.length
          ? query.map((p) => `${p.name}=${encodeURIComponent(String(exampleOf(p.schema, 0, String(p.name))))}`).join('&')
          : undefined;
      // A response whose route declares no shape (or a text document) gets no invented example.
      const shape = deref(media?.schema);
      const declared =
        shape &&
        (shape.type === 'array' ||
          (shape.properties && Object.keys(shape.properties).length > 0) ||
          shape.anyOf ||
          shape.oneOf ||
          shape.allOf) &&
        content['application/json'];
      // Else a real answer recorded from a running service (scripts/record-examples.ts).
      const real = (recorded as Record<string, { status: number; body: unknown }>)[`${m.toUpperCase()} ${path}`];
      const response =
        media?.example !== undefined
          ? pretty(filledIn(media.example))
          : declared
            ? pretty(exampleOf(media.schema))
            : real
              ? typeof real.body === 'string'
                ? real.body
                : pretty(real.body)
              : undefined;
      out.push({
        method: m.toUpperCase(),
        path,
        summary: String(op.summary ?? ''),
        keyed: (op.security ?? []).length > 0,
        status,
        ...(request ? { request } : {}),
        ...(response ? { response } : {}),
      });
    }
  }
  return out;
}

export interface PriceRow {
  item: string;
  amount: string;
  illustrative: boolean;
}

const money = (n: number) => n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const humanKey = (k: string) =>
  k
    .replace(/_usd$|_bps$/, '')
    .replace(/^usd$/, 'price')
    .replace(/_/g, ' ');
/** A generic price field (`usd`, `price_usd`, `toll_usd`...): the item's own name says it all. */
const GENERIC = /^(usd|price|price_usd|toll_usd|amount_usd|fee_usd|bps)$/;
/** An item's name in words: a catalog id (`exhibit_d`) becomes "Exhibit D"; a label stays as written. */
const words = (name: string) =>
  /[A-Z]/.test(name)
    ? name
    : name
        .replace(/_/g, ' ')
        .replace(/\b(\d+)([a-z])/g, '$1-$2')
        .replace(/\b([a-z])\b/g, (c) => c.toUpperCase())
        .replace(/^./, (c) => c.toUpperCase());
const itemName = (here: string, k: string) =>
  !here ? idWords(humanKey(k).replace(/ /g, '_')) : GENERIC.test(k) ? words(here) : `${words(here)}, ${humanKey(k)}`;
const TOLL = new Map(TOLLS.map((t) => [t.sku, t.usd]));

/**
 * Every price in a catalog: numeric fields named for USD or bps, named by the
 * nearest label/id/sku, and every toll SKU the catalog names.
 */
export function pricesOf(catalog: unknown): PriceRow[] {
  const rows: PriceRow[] = [];
  const skus = new Set<string>();
  const walk = (v: unknown, name: string, illustrative: boolean, usdMap = false, parentKey = '') => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x, name, illustrative));
    if (!v || typeof v !== 'object') {
      if (typeof v === 'string' && TOLL.has(v)) skus.add(v);
      return;
    }
    const o = v as Record<string, unknown>;
    const here = String(o.label ?? o.name ?? o.id ?? o.sku ?? o.template_id ?? name);
    const ill = illustrative || o.illustrative === true;
    for (const [k, x] of Object.entries(o)) {
      if (typeof x === 'number' && usdMap) {
        rows.push({ item: itemName(name, k), amount: `${money(x)} USD`, illustrative: ill });
      } else if (typeof x === 'number' && /(^|_)(usd|bps)$|^bps$|fee_bps|price/.test(k)) {
        rows.push({
          item: itemName(here, k),
          amount: /bps/.test(k) ? `${x} bps` : `${money(x)} USD`,
          illustrative: ill || /scale|example/.test(k),
        });
      } else if (x && typeof x === 'object') {
        const mapOfPrices = !Array.isArray(x) && /_usd$/.test(k) && Object.values(x).every((y) => typeof y === 'number');
        // The entries of a price map (`wholesale_usd: {sprint: {...}}`) are named with it: "Wholesale: sprint".
        const child = /^(skus|items|tiers|layers)$/.test(k)
          ? here
          : /_usd$/.test(name) || (Array.isArray(o) === false && /_usd$/.test(parentKey))
            ? `${name}: ${humanKey(k)}`
            : humanKey(k);
        walk(x, child, ill || /scale_example|illustrative/.test(k), mapOfPrices, k);
      } else if (typeof x === 'string' && TOLL.has(x)) {
        skus.add(x);
      }
    }
  };
  walk(catalog, '', false);
  const tolls = [...skus]
    .sort()
    .map((sku) => ({ item: `${TOLL_LABELS[sku] ?? idWords(sku)} (per act)`, amount: `${money(TOLL.get(sku)!)} USD`, illustrative: false }));
  return [...tolls, ...rows];
}
