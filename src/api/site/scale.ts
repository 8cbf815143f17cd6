/**
 * Every layer `/scale` endpoint of this area (SPEC 1, 4.2): an illustrative
 * projection, units x tolls, computed by src/domain/scale.ts from the caller's
 * unit counts (query) or our default example's.
 */
import { z } from 'zod';
import { napScale, ornScale, pdtrScale, requireReceiptScale, type Projection } from '../../domain/scale.ts';
import type { AppContext } from '../context.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { illustrative, usdString } from './schemas.ts';
import { operation } from '../operation.ts';

/** A unit count: a non-negative integer up to 10^9 (so every projection stays exact). */
const units = (dflt: number, what: string) => z.coerce.number().int().min(0).max(1_000_000_000).default(dflt).describe(what);

export const napScaleQuery = z.object({
  acts_per_month: units(1_000_000, 'governed acts per month'),
  refusal_rate_pct: z.coerce
    .number()
    .min(0)
    .max(100)
    .multipleOf(0.01)
    .default(5)
    .describe('share of acts refused (BLOCK/HOLD/DENY/SILENCE), percent'),
});
export const pdtrScaleQuery = z.object({ bindings_per_month: units(100_000, 'payment bindings per month') });
export const ornScaleQuery = z.object({
  agents_in_graph: units(12, 'agents in the orchestration graph').refine((n) => n <= 100_000, 'at most 100000'),
  events_per_month: units(10_000, 'orchestration events per month').refine((n) => n <= 10_000_000, 'at most 10000000'),
  ga_declares_per_month: units(4, 'General Average declarations per month'),
});
export const requireReceiptScaleQuery = z.object({ challenges_per_month: units(1_000_000, 'RR-1 428 challenges per month') });

export const projectionResponse = z.object({
  layer: z.string(),
  ...illustrative,
  inputs: z.record(z.string(), z.number()),
  lines: z.array(z.object({ line: z.string(), units: z.number(), toll_usd: usdString, monthly_usd: usdString })),
  monthly_usd: usdString,
  annual_usd: usdString,
});

export function registerScaleRoutes(router: Router, ctx: AppContext): void {
  const scale = <S extends z.ZodType>(path: string, layer: string, query: S, project: (q: z.output<S>) => Projection) =>
    operation(
      router,
      ctx,
      {
        method: 'GET',
        path: path,
        summary: `Illustrative ${layer} projection (units x tolls); carries no contract`,
        auth: 'public',
        tag: layer,
        query,
        response: projectionResponse,
      },
      ({ input }) => reply(project(input)),
    );
  scale('/api/v1/nap/scale', 'nap', napScaleQuery, napScale);
  scale('/api/v1/pdtr/scale', 'pdtr', pdtrScaleQuery, pdtrScale);
  scale('/api/v1/orn/scale', 'orn', ornScaleQuery, ornScale);
  scale('/api/v1/require-receipt/scale', 'require_receipt', requireReceiptScaleQuery, requireReceiptScale);
}
