/**
 * Guards for an agent's tools (exported as `fusegate/guard`): `guard(execute,
 * { fuse, kind })` wraps any async tool function so that each call first asks
 * the gate, exactly as the MCP proxy does (./gate-check.ts), and runs only on
 * PERMIT (or GO, for a tool that pays). Any other answer, and a gate that
 * cannot be reached, throws `FuseGateRefusal` instead of running the tool.
 * The adapters for the Vercel AI SDK, the OpenAI Agents SDK and LangChain.js
 * are beside this file (`fusegate/guard/ai`, `/openai-agents`, `/langchain`).
 *
 * @example
 *   import { guard } from 'fusegate/guard';
 *   const sendEmail = guard(async (to: string, body: string) => mailer.send(to, body), { fuse: 'fuse_…', kind: 'send_email' });
 *   await sendEmail('ops@example.com', 'hi');   // throws FuseGateRefusal once the fuse is blown
 */
import { FuseGateClient, type Fetch } from '../client.ts';
import { askGate, refusalText, type GateQuestion, type GateVerdict, type Mandate, type Rail, type Transfer } from './gate-check.ts';

export { refusalText, verdictMeta, type GateVerdict, type Mandate, type Rail, type Transfer } from './gate-check.ts';

/** How long a guard waits for the gate by default before it refuses the call (fail closed). */
export const DEFAULT_GATE_TIMEOUT_MS = 10_000;

interface Common {
  /** The fuse every call hops on. */
  fuse: string;
  /** The tool's name, named in the receipt (an MCP tool name: 1 to 128 of A-Z a-z 0-9 _ - .). The adapters fill it in. */
  name?: string | undefined;
  /** The gate to ask; by default one from FUSEGATE_URL and FUSEGATE_KEY (`gateFromEnv`). */
  gate?: FuseGateClient | undefined;
  /** Told every verdict, the permitted ones included (their receipt id and verify_url). */
  onVerdict?: ((verdict: GateVerdict) => void) | undefined;
  /** How long a held payment call waits for its review to be answered (default 0: refused at once as held). */
  holdWaitSeconds?: number | undefined;
}

/** A hop with this act kind (none: the fuse alone decides). */
export interface HopGuard extends Common {
  kind?: string | undefined;
  rail?: undefined;
}

/** A tool that pays: the pre-finality evaluate on its transfer, taken from the call's arguments. */
export interface PaymentGuard<A extends unknown[]> extends Common {
  rail: Rail;
  transfer: (...args: A) => Transfer;
  mandate?: Mandate | undefined;
  kind?: undefined;
}

export type GuardOptions<A extends unknown[]> = HopGuard | PaymentGuard<A>;

/** A call the gate did not clear: thrown by a guarded function instead of running it. */
export class FuseGateRefusal extends Error {
  override name = 'FuseGateRefusal';
  readonly verdict: GateVerdict;
  constructor(verdict: GateVerdict) {
    super(refusalText(verdict));
    this.verdict = verdict;
  }
  get decision(): string | null {
    return this.verdict.decision;
  }
  get receiptId(): string | undefined {
    return this.verdict.receipt_id;
  }
  /** A HOLD: the review it opened (docs/reviews.md), which a person of the account answers. */
  get reviewId(): string | undefined {
    return this.verdict.review_id;
  }
  get reviewUrl(): string | undefined {
    return this.verdict.review_url;
  }
}

/**
 * The gate named by FUSEGATE_URL and FUSEGATE_KEY, each request bounded by
 * `timeoutMs` (a gate that does not answer in time refuses the call), sent
 * with `transport` (the global fetch unless the caller has a faster one: the
 * proxy's, src/proxy/gate-fetch.ts).
 */
export function gateFromEnv(
  env: Record<string, string | undefined> = globalThis.process?.env ?? {},
  timeoutMs = DEFAULT_GATE_TIMEOUT_MS,
  transport: Fetch = fetch,
): FuseGateClient {
  const baseUrl = env.FUSEGATE_URL;
  if (!baseUrl) throw new TypeError('no gate: pass { gate } or set FUSEGATE_URL (and FUSEGATE_KEY)');
  return new FuseGateClient({
    baseUrl,
    apiKey: env.FUSEGATE_KEY,
    fetch: (url, init) => transport(url, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
  });
}

/**
 * The check a guard makes before each call: its verdict (and `onVerdict` told),
 * whatever it is. The adapters use it where their SDK wants an answer rather
 * than a throw.
 */
export function gateCheck<A extends unknown[]>(opts: GuardOptions<A>): (...args: A) => Promise<GateVerdict> {
  if (!opts.fuse) throw new TypeError('guard: a fuse is required');
  const gate = opts.gate ?? gateFromEnv();
  const question = (args: A): GateQuestion =>
    opts.rail !== undefined
      ? { fuse: opts.fuse, tool: opts.name, rail: opts.rail, transfer: opts.transfer(...args), mandate: opts.mandate }
      : { fuse: opts.fuse, tool: opts.name, kind: opts.kind };
  const ask = async (args: A): Promise<GateVerdict> => {
    let q: GateQuestion;
    try {
      q = question(args);
    } catch (e) {
      // A payment whose transfer cannot be read from the call is not evaluated, so it does not run.
      return { action: 'refuse', decision: null, reason: `the transfer could not be read from the call: ${(e as Error).message}` };
    }
    return askGate(gate, q, { holdWaitSeconds: opts.holdWaitSeconds });
  };
  return async (...args: A) => {
    const verdict = await ask(args);
    opts.onVerdict?.(verdict);
    return verdict;
  };
}

/** `execute`, run only once the gate cleared the call; otherwise it throws FuseGateRefusal and `execute` never runs. */
export function guard<A extends unknown[], R>(
  execute: (...args: A) => R | PromiseLike<R>,
  opts: GuardOptions<A>,
): (...args: A) => Promise<R> {
  const check = gateCheck(opts);
  return async (...args: A) => {
    const verdict = await check(...args);
    if (verdict.action !== 'run') throw new FuseGateRefusal(verdict);
    return await execute(...args);
  };
}
