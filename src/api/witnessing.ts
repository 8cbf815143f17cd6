/**
 * Witnessing (C2SP tlog-witness), a background job beside the logs, never in
 * an act's way: every WITNESS_INTERVAL_MS each public log's newest checkpoint
 * is offered to every witness of the policy that has not cosigned it, all
 * witnesses concurrently, each request bounded by WITNESS_TIMEOUT_MS. A
 * witness is at most one request in flight per log; one that fails waits
 * (doubling up to WITNESS_MAX_BACKOFF_MS) and is caught up from the size it
 * holds when it answers again. A 409 names that size: the request is made
 * again from it (a witness that lost its state says 0). Every cosignature is
 * verified against the witness's vkey (net/witness-client.ts) before it is kept.
 */
import { addCheckpoint } from '../net/witness-client.ts';
import type { PolicyWitness } from '../crypto/witness-policy.ts';
import { signCheckpoint } from '../ledger/checkpoint.ts';
import { consistencyProof, listLogs, treeHead } from '../ledger/log.ts';
import {
  COSIGNATURES_KEPT_WHOLE_MS,
  recordCosignature,
  recordWitnessError,
  recordWitnessSize,
  thinCosignatures,
  witnessStates,
} from '../ledger/witnesses.ts';
import type { AppContext } from './context.ts';
import type { BackgroundJob } from './jobs.ts';

interface Pair {
  /** The size the witness holds, as far as we know (the `old` of the next request). */
  known: number;
  cosigned: number | null;
  failures: number;
  retryAt: number;
  busy: boolean;
}

/** 409s followed in one submission before it counts as a failure. */
const MAX_CONFLICTS = 3;
/** How often old cosignatures are thinned (ledger/witnesses.ts, thinCosignatures). */
const THIN_EVERY_MS = 60_000;

export class Witnessing implements BackgroundJob {
  readonly name = 'witnessing';
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private readonly pairs = new Map<string, Pair>();
  private readonly loaded = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  /** Per log: the size below which cosignatures are thinned already, and when that last ran. */
  private readonly thinned = new Map<string, { after: number; at: number }>();
  private readonly ctx: AppContext;

  constructor(ctx: AppContext) {
    this.ctx = ctx;
  }

  start(): void {
    if (!this.ctx.witnessPolicy?.witnesses.length) return;
    this.timer = setInterval(() => void this.tick(), this.ctx.config.WITNESS_INTERVAL_MS);
    this.timer.unref();
    void this.tick();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Offers each log's newest checkpoint to each witness that is idle, due and behind. */
  private async tick(): Promise<void> {
    if (this.ticking || !this.timer) return;
    this.ticking = true;
    try {
      const policy = this.ctx.witnessPolicy!;
      for (const { name: log } of await listLogs(this.ctx.ledger.read)) {
        await this.load(log);
        await this.thin(log);
        const head = await treeHead(this.ctx.ledger.read, log);
        if (head.size === 0) continue;
        for (const w of policy.witnesses) {
          const pair = this.pair(log, w);
          if (pair.busy || pair.retryAt > Date.now() || pair.cosigned === head.size) continue;
          pair.busy = true;
          const p = this.submit(log, w, pair, head)
            .catch((e) => this.ctx.log('error', 'witness submission failed', { log, witness: w.name, error: String(e) }))
            .finally(() => {
              pair.busy = false;
              this.inFlight.delete(p);
            });
          this.inFlight.add(p);
        }
      }
    } catch (e) {
      this.ctx.log('error', 'witnessing tick failed', { error: String(e) });
    } finally {
      this.ticking = false;
    }
  }

  /** Once a minute per log: cosignatures older than an hour thinned to one cosigned checkpoint per minute. */
  private async thin(log: string): Promise<void> {
    const t = this.thinned.get(log) ?? { after: 0, at: 0 };
    if (Date.now() - t.at < THIN_EVERY_MS) return;
    const before = new Date(Date.now() - COSIGNATURES_KEPT_WHOLE_MS).toISOString();
    const after = await this.ctx.ledger.write((tx) => thinCosignatures(tx, log, before, t.after));
    this.thinned.set(log, { after, at: Date.now() });
  }

  private pair(log: string, w: PolicyWitness): Pair {
    const key = `${log}\n${w.key.vkey}`;
    let p = this.pairs.get(key);
    if (!p) this.pairs.set(key, (p = { known: 0, cosigned: null, failures: 0, retryAt: 0, busy: false }));
    return p;
  }

  /** The persisted state of a log's witnesses, read once per process. */
  private async load(log: string): Promise<void> {
    if (this.loaded.has(log)) return;
    const byVkey = new Map(this.ctx.witnessPolicy!.witnesses.map((w) => [w.key.vkey, w]));
    for (const s of await witnessStates(this.ctx.ledger.read, log)) {
      const w = byVkey.get(s.vkey);
      if (!w) continue;
      Object.assign(this.pair(log, w), { known: s.known_size, cosigned: s.cosigned_size });
    }
    this.loaded.add(log);
  }

  private async submit(log: string, w: PolicyWitness, pair: Pair, head: { size: number; root: Uint8Array }): Promise<void> {
    const { ledger, config } = this.ctx;
    const note = signCheckpoint(this.ctx, log, head).note;
    let old = pair.known;
    for (let i = 0; i <= MAX_CONFLICTS; i++) {
      if (old > head.size) return this.failed(log, w, pair, `the witness holds size ${old}, beyond the log's ${head.size}`);
      const proof = old > 0 && old < head.size ? await consistencyProof(ledger.read, log, old, head.size) : [];
      const r = await addCheckpoint(w, old, proof, note, config.WITNESS_TIMEOUT_MS);
      if (r.kind === 'cosigned') {
        await ledger.write((tx) => recordCosignature(tx, log, w.key.vkey, w.name, head.size, r.line));
        Object.assign(pair, { known: head.size, cosigned: head.size, failures: 0, retryAt: 0 });
        return;
      }
      if (r.kind === 'failed') return this.failed(log, w, pair, r.error);
      old = r.size;
      pair.known = old;
      await ledger.write((tx) => recordWitnessSize(tx, log, w.key.vkey, w.name, old));
    }
    return this.failed(log, w, pair, `still in conflict after ${MAX_CONFLICTS} resubmissions`);
  }

  private async failed(log: string, w: PolicyWitness, pair: Pair, error: string): Promise<void> {
    const { WITNESS_INTERVAL_MS: base, WITNESS_MAX_BACKOFF_MS: max } = this.ctx.config;
    pair.failures++;
    const wait = Math.min(max, base * 2 ** Math.min(pair.failures, 20));
    pair.retryAt = Date.now() + wait * (0.75 + Math.random() * 0.5);
    if (pair.failures === 1) this.ctx.log('error', 'witness did not cosign', { log, witness: w.name, error });
    await this.ctx.ledger.write((tx) => recordWitnessError(tx, log, w.key.vkey, w.name, error));
  }
}
