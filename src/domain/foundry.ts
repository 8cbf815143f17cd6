/**
 * The foundry pipeline (SPEC 2.5 attach flow, steps 1 to 9) and the per-tenant
 * projection. Pure: the route gathers what the steps need from the ledger.
 *
 * Our design (SPEC shows only the path): a run is a sealed rehearsal of the
 * attach flow for one tenant. Each step is computed with the same rules its own
 * endpoint uses (oracle aggregate, trigger threshold and fee, conformity pack,
 * depository parity) on the inputs the caller gives; a step without its inputs
 * is `skipped`, a step whose rule stops it is `held` (a DISPUTED reading, a
 * threshold not reached, a refused event), and the steps that depend on a held
 * or skipped step are `skipped` too. A run changes no other area's state: each
 * step names the endpoint (`next`) that performs it for real.
 */
import { DATA } from '../catalog/catalogs.ts';
import { tollMicros } from '../catalog/tolls.ts';
import { ConformityRefusal, buildPack, packHash, type PackInput } from './conformity.ts';
import { DepositoryRefusal, applyEvent } from './depository.ts';
import { formatUsd, usdToMicros } from '../catalog/money.ts';
import { aggregate, type OraclePolicy, type Reading } from './oracle.ts';
import { line, projection, type Projection } from './scale.ts';
import { fireFee, thresholdReached, type Threshold } from './trigger.ts';

export type StepStatus = 'done' | 'skipped' | 'held';

export interface Step {
  step: number;
  layer: string;
  outcome: string;
  status: StepStatus;
  detail: Record<string, unknown>;
  next: { method: 'GET' | 'POST'; path: string } | null;
}

export interface PipelineInput {
  tenant_id: string;
  act: { kind: string };
  /** The inference session named by the caller, as the ledger knows it (null: named but not found). */
  inference?: { session_id: string; size: number; root: string } | null | undefined;
  readings?: Reading[] | undefined;
  template_id?: string | undefined;
  threshold?: Threshold | undefined;
  exposure_usd?: string | undefined;
  conformity?: Omit<PackInput, 'generated_at' | 'log'> | undefined;
  asset?: { asset_id: string; units: number; custodian?: string | undefined } | undefined;
}

export interface PipelineContext {
  oraclePolicy: OraclePolicy;
  generatedAt: string;
  log: PackInput['log'];
}

/** The endpoint that performs each layer's step for real. */
const NEXT: Record<string, Step['next']> = {
  physics: { method: 'POST', path: '/api/v1/execute-gate' },
  print: { method: 'POST', path: '/api/v1/inference/chat/completions' },
  oracle: { method: 'POST', path: '/api/v1/oracle/aggregate' },
  obligation: { method: 'POST', path: '/signal/trigger/publish' },
  settlement: { method: 'POST', path: '/api/v1/foundry/trigger/fire' },
  conformity: { method: 'POST', path: '/api/v1/conformity/generate' },
  depository: { method: 'POST', path: '/api/v1/depository/attest' },
  clearing: { method: 'GET', path: '/api/v1/clearing/catalog' },
  stack: { method: 'GET', path: '/api/v1/stack/catalog' },
};

/** The toll each done step would carry when performed for real (the projection's lines). */
export const STEP_SKU: Record<string, string | null> = {
  physics: 'seal',
  print: 'inference_seal',
  oracle: 'oracle_aggregate',
  obligation: 'trigger_publish',
  settlement: 'bps_fire',
  conformity: 'conformity_pack',
  depository: 'dtcc_attest',
  clearing: null,
  stack: 'execute_gate',
};

export function runPipeline(input: PipelineInput, pc: PipelineContext): { status: 'complete' | 'partial'; steps: Step[] } {
  const results = new Map<string, Pick<Step, 'status' | 'detail'>>();
  const done = (detail: Record<string, unknown>) => ({ status: 'done' as const, detail });
  const skipped = (reason: string) => ({ status: 'skipped' as const, detail: { reason } });
  const held = (reason: string, detail: Record<string, unknown> = {}) => ({ status: 'held' as const, detail: { reason, ...detail } });

  results.set('physics', done({ act: input.act, sealed_by: "this run's receipt (receipt_id, verify_url)" }));

  if (input.inference === undefined) results.set('print', skipped('optional layer: no inference_session_id given'));
  else if (input.inference === null)
    results.set('print', held('unknown_session', { detail: 'no inference session of that id for this key' }));
  else
    results.set(
      'print',
      done({ session_id: input.inference.session_id, sealed_exchanges: input.inference.size, session_root: input.inference.root }),
    );

  let value: string | null = null;
  if (!input.readings) results.set('oracle', skipped('no readings given'));
  else {
    const a = aggregate(input.readings, DATA.foundry.oracle.sources, pc.oraclePolicy);
    if (a.status === 'CONSENSUS') {
      value = a.value;
      results.set('oracle', done({ status: a.status, value: a.value, spread: a.spread, sources: a.sources }));
    } else results.set('oracle', held('disputed', { status: a.status, why: a.reason, spread: a.spread }));
  }

  const template = DATA.foundry.trigger_templates.find((t) => t.template_id === input.template_id);
  if (!template) results.set('obligation', skipped('no template_id given'));
  else
    results.set('obligation', done({ template_id: template.template_id, state: 'ARMED', obligation_surface: template.obligation_surface }));

  if (!template || !input.threshold || input.exposure_usd === undefined)
    results.set('settlement', skipped('needs template_id, threshold and exposure_usd'));
  else if (value === null) results.set('settlement', skipped('needs an oracle CONSENSUS value'));
  else {
    const exposure = BigInt(usdToMicros(input.exposure_usd));
    const ceiling = BigInt(template.obligation_surface.exposure_ceiling_usd) * 1_000_000n;
    if (exposure > ceiling)
      results.set('settlement', held('exposure_above_ceiling', { exposure_ceiling_usd: template.obligation_surface.exposure_ceiling_usd }));
    else if (!thresholdReached(input.threshold, value))
      results.set('settlement', held('threshold_not_reached', { state: 'ARMED', reading: value, threshold: input.threshold }));
    else {
      const fee = fireFee(exposure, template.obligation_surface.fee_bps, DATA.clear.bps_tiers, 0n);
      results.set(
        'settlement',
        done({
          state: 'FIRED',
          reading: value,
          fee_bps: fee.bps,
          fee_source: fee.source,
          fee_usd: formatUsd(fee.feeMicros),
          exposure_usd: formatUsd(exposure),
        }),
      );
    }
  }

  if (!input.conformity) results.set('conformity', skipped('no conformity input given'));
  else {
    try {
      const pack = buildPack({ ...input.conformity, generated_at: pc.generatedAt, log: pc.log });
      results.set(
        'conformity',
        done({
          category_id: pack.category.category_id,
          annex_iii: pack.category.annex_iii,
          open_controls: pack.open_controls,
          pack_hash: packHash(pack),
        }),
      );
    } catch (e) {
      if (!(e instanceof ConformityRefusal)) throw e;
      results.set('conformity', held(e.code, { detail: e.message }));
    }
  }

  if (!input.asset) results.set('depository', skipped('no asset given'));
  else {
    try {
      const twin = applyEvent(undefined, { event_type: 'tokenize', units: input.asset.units, to_custodian: input.asset.custodian });
      results.set(
        'depository',
        done({
          event_type: 'tokenize',
          asset_id: input.asset.asset_id,
          parity: { holds: twin.custody_units === twin.token_supply, custody_units: twin.custody_units, token_supply: twin.token_supply },
        }),
      );
    } catch (e) {
      if (!(e instanceof DepositoryRefusal)) throw e;
      results.set('depository', held(e.code, { detail: e.message }));
    }
  }

  results.set(
    'clearing',
    done({
      log: 'receipts',
      detail: "this run's receipt is a leaf of the receipts log, covered by the next clearing checkpoint",
      checkpoint_path: '/api/v1/logs/receipts/checkpoint',
    }),
  );
  results.set('stack', done({ layers: DATA.stack.layers.map((l) => l.id), meter: 'relay + clear + nap on the commitment boundary' }));

  const steps = DATA.foundry.attach_flow.map((f) => {
    const r = results.get(f.layer)!;
    return { step: f.step, layer: f.layer, outcome: f.outcome, status: r.status, detail: r.detail, next: NEXT[f.layer] ?? null };
  });
  // print is optional: a run is complete when every other step is done.
  const complete = steps.every((s) => s.status === 'done' || (s.layer === 'print' && s.status === 'skipped'));
  return { status: complete ? 'complete' : 'partial', steps };
}

/**
 * A tenant's monthly projection: each step its last run did, performed for real
 * `runsPerMonth` times, at the step's toll; plus the runs themselves; plus,
 * for a settlement, the bps fee the rehearsed fire charged (fee_bps on the
 * enabled exposure), which is most of what a settlement costs.
 */
export function tenantProjection(
  tenantId: string,
  steps: ReadonlyArray<Pick<Step, 'layer' | 'status' | 'detail'>>,
  runsPerMonth: number,
): Projection {
  const units = BigInt(runsPerMonth);
  const parts = [line('pipeline runs x foundry_pipeline', units, BigInt(tollMicros('foundry_pipeline')))];
  for (const s of steps.filter((x) => x.status === 'done')) {
    const sku = STEP_SKU[s.layer];
    if (sku) parts.push(line(`${s.layer} x ${sku}`, units, BigInt(tollMicros(sku))));
    if (s.layer === 'settlement' && typeof s.detail.fee_usd === 'string') {
      parts.push(
        line(
          `settlement x bps_fee (${String(s.detail.fee_bps)} bps on ${String(s.detail.exposure_usd)})`,
          units,
          BigInt(usdToMicros(s.detail.fee_usd)),
        ),
      );
    }
  }
  return projection(`foundry:${tenantId}`, DATA.foundry.scale_example.note, { runs_per_month: runsPerMonth }, parts);
}
