/**
 * The guard for LangChain.js tools (`fusegate/guard/langchain`;
 * `@langchain/core` is an optional peer dependency). A guarded tool is the
 * tool itself (its name, description and schema, as a model binds them) whose
 * every call first asks the gate (./guard.ts). Called by an agent's tool loop
 * (with a tool call), a refusal answers a ToolMessage with status "error" that
 * names the decision, the reason and the receipt; called with plain arguments,
 * it throws FuseGateRefusal. Either way the tool does not run.
 *
 * @example
 *   import { createAgent, tool } from 'langchain';
 *   import { guardTool } from 'fusegate/guard/langchain';
 *   const sendEmail = guardTool(tool(send, { name: 'send_email', description, schema }), { fuse: 'fuse_…', kind: 'send_email' });
 *   await createAgent({ model, tools: [sendEmail] }).invoke({ messages: [{ role: 'user', content: 'email the report' }] });
 */
import { ToolMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { FuseGateRefusal, gateCheck, refusalText, verdictMeta, type GuardOptions } from './guard.ts';

export { FuseGateRefusal, type GateVerdict } from './guard.ts';

/** The guard of a tool: its fuse and kind (or a rail, the transfer read from the call's arguments). */
export type ToolGuardOptions = GuardOptions<[args: Record<string, unknown>]>;

interface ToolCallLike {
  type: 'tool_call';
  id?: string;
  args: Record<string, unknown>;
}

const isToolCall = (v: unknown): v is ToolCallLike => typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'tool_call';

/**
 * `tool` behind the fuse: a view of the same tool (its prototype is `tool`)
 * whose `call`, which `invoke`, `batch` and `stream` all go through, asks the gate first.
 */
export function guardTool<T extends StructuredToolInterface>(tool: T, opts: ToolGuardOptions): T {
  const check = gateCheck({ ...opts, name: opts.name ?? tool.name });
  const guarded = Object.create(tool) as T;
  const call = async (arg: unknown, config?: { toolCall?: { id?: string } }, tags?: string[]) => {
    const args = (isToolCall(arg) ? arg.args : arg) as Record<string, unknown>;
    const verdict = await check(typeof args === 'object' && args !== null ? args : {});
    if (verdict.action === 'run')
      return (tool.call as (a: unknown, c?: unknown, t?: string[]) => Promise<unknown>).call(guarded, arg, config, tags);
    const toolCallId = isToolCall(arg) ? arg.id : config?.toolCall?.id;
    if (toolCallId === undefined) throw new FuseGateRefusal(verdict);
    return new ToolMessage({
      content: refusalText(verdict),
      tool_call_id: toolCallId,
      name: tool.name,
      status: 'error',
      artifact: { fusegate: verdictMeta(verdict) },
    });
  };
  Object.defineProperty(guarded, 'call', { value: call, writable: true, configurable: true });
  return guarded;
}
