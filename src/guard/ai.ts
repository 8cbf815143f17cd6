/**
 * The guard for the Vercel AI SDK's tools (`fusegate/guard/ai`; `ai` is an
 * optional peer dependency, used for its types only). A guarded tool is the
 * same tool whose `execute` first asks the gate (./guard.ts); a refusal throws
 * FuseGateRefusal, which the SDK's tool loop turns into a tool error that the
 * model reads (the decision, the reason and the receipt), and the tool never runs.
 *
 * @example
 *   import { generateText, stepCountIs, tool } from 'ai';
 *   import { guardTools } from 'fusegate/guard/ai';
 *   const tools = guardTools({ sendEmail, getWeather }, { fuse: 'fuse_…', kinds: { sendEmail: 'send_email' } });
 *   await generateText({ model, tools, stopWhen: stepCountIs(5), prompt });
 */
import type { InferToolInput, Tool, ToolExecutionOptions as SdkExecutionOptions, ToolSet } from 'ai';
import type { FuseGateClient } from '../client.ts';
import { FuseGateRefusal, gateCheck, type GateVerdict, type GuardOptions } from './guard.ts';

export { FuseGateRefusal, type GateVerdict } from './guard.ts';

/** The second argument of a tool's execute (its call id, messages, abort signal, context). */
type ToolExecutionOptions = SdkExecutionOptions<unknown>;

/** What the guard of one tool takes: its fuse, and a kind (or a rail and its transfer, read from the tool's input). */
export type ToolGuardOptions<T extends Tool> = GuardOptions<[input: InferToolInput<T>, options: ToolExecutionOptions]>;

type AnyExecute = (input: unknown, options: ToolExecutionOptions) => unknown;

const isAsyncGeneratorFunction = (f: unknown) => Object.prototype.toString.call(f) === '[object AsyncGeneratorFunction]';

/** `tool` with its execute behind the fuse. A tool that streams (an async generator) streams once cleared. */
export function guardTool<T extends Tool>(tool: T, opts: ToolGuardOptions<T>): T {
  const execute = tool.execute as AnyExecute | undefined;
  if (!execute)
    throw new TypeError(
      'guardTool: this tool has no execute function (a provider-executed tool runs elsewhere and cannot be guarded here)',
    );
  const check = gateCheck(opts as GuardOptions<[unknown, ToolExecutionOptions]>);
  const cleared = async (input: unknown, options: ToolExecutionOptions) => {
    const verdict = await check(input, options);
    if (verdict.action !== 'run') throw new FuseGateRefusal(verdict);
  };
  const guarded = isAsyncGeneratorFunction(execute)
    ? async function* (input: unknown, options: ToolExecutionOptions) {
        await cleared(input, options);
        yield* execute(input, options) as AsyncIterable<unknown>;
      }
    : async (input: unknown, options: ToolExecutionOptions) => {
        await cleared(input, options);
        return await execute(input, options);
      };
  return { ...tool, execute: guarded };
}

export interface ToolSetGuardOptions<T extends ToolSet> {
  fuse: string;
  /** The act kind of each tool, by its key in the set; a tool without one is checked against the fuse alone. */
  kinds?: { [K in keyof T]?: string };
  gate?: FuseGateClient | undefined;
  onVerdict?: ((verdict: GateVerdict) => void) | undefined;
}

/**
 * Every tool of the set that has an execute function, behind the fuse; each
 * receipt names the tool by its key in the set. (A tool that pays, checked
 * with the pre-finality evaluate, is guarded on its own with `guardTool`.)
 */
export function guardTools<T extends ToolSet>(tools: T, opts: ToolSetGuardOptions<T>): T {
  const out: Record<string, Tool> = {};
  for (const [name, t] of Object.entries(tools) as Array<[string, Tool]>) {
    out[name] = t.execute
      ? guardTool(t, { fuse: opts.fuse, name, kind: opts.kinds?.[name], gate: opts.gate, onVerdict: opts.onVerdict })
      : t;
  }
  return out as T;
}
