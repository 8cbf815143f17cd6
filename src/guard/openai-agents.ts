/**
 * The guard for the OpenAI Agents SDK's function tools
 * (`fusegate/guard/openai-agents`; `@openai/agents` is an optional peer
 * dependency). The SDK's own seam for this is a tool input guardrail: it runs
 * before the tool, and its rejection is what the model reads instead of the
 * tool's output. `fuseGuardrail` is that guardrail (./guard.ts asks the gate);
 * `guardTool` adds it to a tool made with `tool()`, after the tool's own guardrails.
 *
 * @example
 *   import { Agent, run, tool } from '@openai/agents';
 *   import { guardTool } from 'fusegate/guard/openai-agents';
 *   const sendEmail = guardTool(tool({ name: 'send_email', description, parameters, execute }), { fuse: 'fuse_…', kind: 'send_email' });
 *   await run(new Agent({ name: 'ops', tools: [sendEmail] }), 'email the report');
 */
import {
  defineToolInputGuardrail,
  ToolGuardrailFunctionOutputFactory,
  type FunctionTool,
  type ToolInputGuardrailDefinition,
} from '@openai/agents';
import { gateCheck, gateFromEnv, refusalText, verdictMeta, type GateVerdict, type GuardOptions } from './guard.ts';

export type { GateVerdict } from './guard.ts';

/** The guard of a tool whose arguments are a JSON object: its fuse and kind (or a rail, the transfer read from the arguments). */
export type ToolGuardOptions = GuardOptions<[args: Record<string, unknown>]>;

const argumentsOf = (json: string): Record<string, unknown> => {
  try {
    const v = JSON.parse(json || '{}') as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
};

/**
 * A tool input guardrail that lets a call through only when the gate clears it;
 * a refusal, a HOLD or a gate that cannot be reached rejects it with the
 * decision, the reason and the receipt. The verdict is the guardrail's
 * `outputInfo.fusegate`. Without `name`, the receipt names the called tool.
 */
export function fuseGuardrail<Context = unknown>(opts: ToolGuardOptions): ToolInputGuardrailDefinition<Context> {
  const gate = opts.gate ?? gateFromEnv();
  const checks = new Map<string, (args: Record<string, unknown>) => Promise<GateVerdict>>();
  const checkOf = (name: string) => checks.get(name) ?? checks.set(name, gateCheck({ ...opts, gate, name: opts.name ?? name })).get(name)!;
  return defineToolInputGuardrail<Context>({
    name: 'fusegate',
    async run({ toolCall }) {
      const verdict = await checkOf(toolCall.name)(argumentsOf(toolCall.arguments));
      const info = { fusegate: verdictMeta(verdict) };
      return verdict.action === 'run'
        ? ToolGuardrailFunctionOutputFactory.allow(info)
        : ToolGuardrailFunctionOutputFactory.rejectContent(refusalText(verdict), info);
    },
  });
}

/** `tool` with the fuse's guardrail last among its input guardrails; the receipt names the tool. */
export function guardTool<T extends FunctionTool<any, any, any>>(tool: T, opts: ToolGuardOptions): T {
  return { ...tool, inputGuardrails: [...(tool.inputGuardrails ?? []), fuseGuardrail({ ...opts, name: opts.name ?? tool.name })] };
}
