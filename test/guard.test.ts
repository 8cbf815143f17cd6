/**
 * The tool guards (`fusegate/guard` and its adapters) against a real gate: a
 * guarded function runs only on PERMIT (or GO), and each adapter is driven by
 * its SDK's own tool-calling loop with that SDK's scripted model (no network):
 * the Vercel AI SDK's generateText with MockLanguageModelV3, the OpenAI Agents
 * SDK's run() with ScriptedModel, LangChain's createAgent with fakeModel().
 */
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AIMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { fakeModel } from '@langchain/core/testing';
import { Agent, run, tool as agentsTool } from '@openai/agents';
import { assistantMessage, functionCall, modelResponse, ScriptedModel } from '@openai/agents/testing';
import { generateText, stepCountIs, tool as aiTool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { createAgent } from 'langchain';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FuseGateClient } from '../src/client.ts';
import { guardTools } from '../src/guard/ai.ts';
import { FuseGateRefusal, gateFromEnv, guard, type GateVerdict } from '../src/guard/guard.ts';
import { guardTool as guardLangchainTool } from '../src/guard/langchain.ts';
import { guardTool as guardAgentsTool } from '../src/guard/openai-agents.ts';
import { untilCommitted } from './support/commits.ts';
import { freePort } from './support/ports.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let gate: FuseGateClient;
let operator: FuseGateClient;
let fuse: string;
let agentKey: string;

/** The receipt's payload behind a verdict, as anyone reads it from the log. */
async function receiptOf(v: {
  receipt_id?: string | undefined;
}): Promise<{ kind: string; decision: string; data: Record<string, unknown> }> {
  const evidence = await gate.receipt(v.receipt_id!);
  return evidence.payload as never;
}

beforeAll(async () => {
  s = await startTestServer();
  const ops = await s.newKey('ops');
  const agent = await s.newKey('agent', undefined, 'agent', ops.accountId);
  operator = new FuseGateClient({ baseUrl: s.url, apiKey: ops.secret });
  agentKey = agent.secret;
  gate = new FuseGateClient({ baseUrl: s.url, apiKey: agentKey });
});
afterAll(() => s.stop());
beforeEach(async () => {
  fuse = (await operator.createFuse({ state: 'LIVE' })).fuse_id;
});

describe('guard(execute, { fuse, kind })', () => {
  it('runs the function on PERMIT, and not at all once the fuse is blown: a refusal names the decision and the receipt', async () => {
    const sent: string[] = [];
    const verdicts: GateVerdict[] = [];
    const sendEmail = guard(async (to: string) => (sent.push(to), `sent to ${to}`), {
      fuse,
      kind: 'send_email',
      name: 'send_email',
      gate,
      onVerdict: (v) => verdicts.push(v),
    });

    expect(await sendEmail('ops@example.invalid')).toBe('sent to ops@example.invalid');
    expect(verdicts[0]).toMatchObject({ action: 'run', decision: 'PERMIT' });
    expect(await receiptOf(verdicts[0]!)).toMatchObject({
      kind: 'hop',
      decision: 'PERMIT',
      data: { act_kind: 'send_email', tool: 'send_email' },
    });

    await gate.blowFuse(fuse);
    const refused = await sendEmail('cfo@example.invalid').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FuseGateRefusal);
    const r = refused as FuseGateRefusal;
    expect(r.decision).toBe('DENY');
    expect(r.message).toContain('DENY');
    expect(r.message).toContain(r.receiptId!);
    expect(sent).toEqual(['ops@example.invalid']);
    expect(await receiptOf(r.verdict)).toMatchObject({ decision: 'DENY', data: { tool: 'send_email', state: 'DEAD' } });
  });

  it('still gates a tool whose name is no MCP tool name, leaving the name out of the receipt', async () => {
    const verdicts: GateVerdict[] = [];
    const odd = guard(async () => 'ran', { fuse, name: 'send the email', gate, onVerdict: (v) => verdicts.push(v) });
    expect(await odd()).toBe('ran');
    expect((await receiptOf(verdicts[0]!)).data).not.toHaveProperty('tool');
    await gate.blowFuse(fuse);
    await expect(odd()).rejects.toBeInstanceOf(FuseGateRefusal);
  });

  it('refuses, without running, when the gate cannot be reached, fails (5xx) or refuses the request (4xx)', async () => {
    let ran = 0;
    const down = new FuseGateClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, apiKey: 'fg_unused' });
    const offline = guard(async () => ++ran, { fuse, kind: 'deploy', gate: down });
    const e1 = (await offline().catch((e: unknown) => e)) as FuseGateRefusal;
    expect(e1).toBeInstanceOf(FuseGateRefusal);
    expect(e1.verdict).toMatchObject({ action: 'refuse', decision: null });
    expect(e1.message).toMatch(/could not be reached/);

    // A gate failing (5xx) is no answer either.
    const failing = createHttpServer((_, res) =>
      res.writeHead(503, { 'content-type': 'application/problem+json' }).end(
        JSON.stringify({
          type: 'about:blank',
          title: 'Unavailable',
          status: 503,
          code: 'ledger_unavailable',
          detail: 'the ledger cannot be reached',
        }),
      ),
    );
    await new Promise<void>((r) => failing.listen(0, '127.0.0.1', () => r()));
    try {
      const broken = new FuseGateClient({ baseUrl: `http://127.0.0.1:${(failing.address() as AddressInfo).port}`, apiKey: 'fg_unused' });
      const e503 = (await guard(async () => ++ran, { fuse, gate: broken })().catch((e: unknown) => e)) as FuseGateRefusal;
      expect(e503.verdict).toMatchObject({
        action: 'refuse',
        decision: null,
        reason: 'the gate failed (503 ledger_unavailable): the ledger cannot be reached',
      });
    } finally {
      failing.closeAllConnections();
      await new Promise<void>((r) => failing.close(() => r()));
    }

    const unknownFuse = guard(async () => ++ran, { fuse: 'fuse_nosuchfuse', gate });
    const e2 = (await unknownFuse().catch((e: unknown) => e)) as FuseGateRefusal;
    expect(e2.verdict.reason).toMatch(/404 unknown_fuse/);
    expect(ran).toBe(0);
  });

  it('asks the pre-finality evaluate for a tool that pays: GO runs, NO_GO and HOLD do not', async () => {
    const paid: string[] = [];
    const pay = guard(async (amount: string, to: string) => (paid.push(amount), `paid ${amount} to ${to}`), {
      fuse,
      name: 'pay_invoice',
      rail: 'x402',
      transfer: (amount, to) => ({ amount, counterparty: to, currency: 'USDC' }),
      mandate: { max_amount: '500.00' },
      gate,
    });
    expect(await pay('25.00', '0xabc')).toBe('paid 25.00 to 0xabc');
    const over = (await pay('900.00', '0xabc').catch((e: unknown) => e)) as FuseGateRefusal;
    expect(over.verdict).toMatchObject({ action: 'refuse', decision: 'NO_GO' });
    expect(await receiptOf(over.verdict)).toMatchObject({
      kind: 'prefinality',
      decision: 'NO_GO',
      data: { rule: 'mandate_limit', tool: 'pay_invoice' },
    });

    const bigPay = guard(async (amount: string) => (paid.push(amount), 'paid'), {
      fuse,
      rail: 'x402',
      transfer: (amount) => ({ amount, counterparty: '0xabc', currency: 'USDC' }),
      gate,
    });
    const held = (await bigPay('20000.00').catch((e: unknown) => e)) as FuseGateRefusal;
    expect(held.verdict).toMatchObject({ action: 'hold', decision: 'HOLD', hold: { rule: { id: 'review_threshold' } } });
    expect(held.message).toMatch(/HOLD for review/);
    // The refusal names the review a person of the account answers, as the gate opened it.
    expect(held.reviewId).toMatch(/^rev_/);
    expect(held.reviewUrl).toBe(`${s.config.BASE_URL}/v1/reviews/${held.reviewId}`);
    expect(held.message).toContain(`review ${held.reviewId}`);
    expect(held.verdict.hold).toMatchObject({ review_id: held.reviewId, review_url: held.reviewUrl });
    expect((await (await s.fetch(`/v1/reviews/${held.reviewId}`, { key: agentKey })).json()).state).toBe('pending');
    expect(paid).toEqual(['25.00']);

    // The same call again: still held on the same review until a person answers; once approved it runs, once.
    const still = (await bigPay('20000.00').catch((e: unknown) => e)) as FuseGateRefusal;
    expect(still.verdict).toMatchObject({ action: 'hold', review_id: held.reviewId });
    expect((await operator.call('review_approve', { review_id: held.reviewId!, note: 'expected invoice' })).state).toBe('approved');
    expect(await bigPay('20000.00')).toBe('paid');
    expect(paid).toEqual(['25.00', '20000.00']);
    const next = (await bigPay('20000.00').catch((e: unknown) => e)) as FuseGateRefusal;
    expect(next.verdict.action).toBe('hold');
    expect(next.reviewId).not.toBe(held.reviewId);
    // Denied: refused as such, and the call made again asks afresh.
    await operator.call('review_deny', { review_id: next.reviewId! });
    expect(((await bigPay('20000.00').catch((e: unknown) => e)) as FuseGateRefusal).verdict).toMatchObject({
      action: 'refuse',
      decision: 'DENY',
      review_id: next.reviewId,
    });
    expect(paid).toEqual(['25.00', '20000.00']);
  });

  it('with holdWaitSeconds, a held call waits for its review: approved meanwhile, it runs; denied, it is refused', async () => {
    const paid: string[] = [];
    const pay = guard(async (amount: string) => (paid.push(amount), 'paid'), {
      fuse,
      rail: 'x402',
      transfer: (amount) => ({ amount, counterparty: '0xdef', currency: 'USDC' }),
      gate,
      holdWaitSeconds: 600,
    });
    /** Answers the one review pending for this transfer as soon as the held call has opened it. */
    const answer = async (amount: string, how: 'review_approve' | 'review_deny') => {
      let id: string | undefined;
      await untilCommitted(s.ctx.ledger, async () => {
        const list = (await operator.call('reviews_list', { state: 'pending' })) as unknown as {
          data: Array<{ id: string; request?: { transfer?: { amount?: string } } }>;
        };
        id = list.data.find((r) => JSON.stringify(r).includes(`"${amount}"`))?.id;
        return id !== undefined;
      });
      await operator.call(how, { review_id: id! });
    };
    const [ran] = await Promise.all([pay('30000.00'), answer('30000.00', 'review_approve')]);
    expect(ran).toBe('paid');
    expect(paid).toEqual(['30000.00']);
    const [refused] = await Promise.all([pay('40000.00').catch((e: unknown) => e), answer('40000.00', 'review_deny')]);
    expect((refused as FuseGateRefusal).verdict).toMatchObject({ action: 'refuse', decision: 'DENY' });
    expect(paid).toEqual(['30000.00']);
  });

  it('takes its gate from FUSEGATE_URL and FUSEGATE_KEY', async () => {
    expect(() => gateFromEnv({})).toThrow(/FUSEGATE_URL/);
    const viaEnv = guard(async () => 'ran', { fuse, gate: gateFromEnv({ FUSEGATE_URL: s.url, FUSEGATE_KEY: agentKey }) });
    expect(await viaEnv()).toBe('ran');
    const otherAccount = guard(async () => 'ran', {
      fuse,
      gate: gateFromEnv({ FUSEGATE_URL: s.url, FUSEGATE_KEY: (await s.newKey('elsewhere', undefined, 'agent')).secret }),
    });
    expect(((await otherAccount().catch((x: unknown) => x)) as FuseGateRefusal).verdict.reason).toMatch(/404 unknown_fuse/);
  });
});

describe('the Vercel AI SDK: guardTools in generateText', () => {
  /** A model that calls sendEmail once, then answers with what the tool result said. */
  const scripted = () =>
    new MockLanguageModelV3({
      doGenerate: [
        {
          content: [
            { type: 'tool-call', toolCallId: 'call-1', toolName: 'sendEmail', input: JSON.stringify({ to: 'ops@example.invalid' }) },
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
          warnings: [],
        },
        {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
          warnings: [],
        },
      ],
    });

  it('runs the tool on PERMIT; once the fuse is blown the model reads the refusal instead and the tool never runs', async () => {
    const sent: string[] = [];
    const tools = guardTools(
      {
        sendEmail: aiTool({
          description: 'Send an email',
          inputSchema: z.object({ to: z.string() }),
          execute: async ({ to }) => (sent.push(to), { sent: to }),
        }),
      },
      { fuse, kinds: { sendEmail: 'send_email' }, gate },
    );

    const ok = await generateText({ model: scripted(), tools, stopWhen: stepCountIs(3), prompt: 'email ops' });
    expect(sent).toEqual(['ops@example.invalid']);
    expect(ok.steps[0]!.toolResults).toMatchObject([{ toolName: 'sendEmail', output: { sent: 'ops@example.invalid' } }]);

    await gate.blowFuse(fuse);
    const model = scripted();
    const refused = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'email ops' });
    expect(sent).toHaveLength(1);
    const error = refused.steps[0]!.content.find((p) => p.type === 'tool-error') as { error: unknown } | undefined;
    expect(error?.error).toBeInstanceOf(FuseGateRefusal);
    const verdict = (error!.error as FuseGateRefusal).verdict;
    expect(verdict.decision).toBe('DENY');
    // The second model call carries the refusal as the tool's result: the decision and the receipt.
    const prompt = JSON.stringify(model.doGenerateCalls[1]!.prompt);
    expect(prompt).toContain('DENY');
    expect(prompt).toContain(verdict.receipt_id!);
    expect(await receiptOf(verdict)).toMatchObject({ decision: 'DENY', data: { tool: 'sendEmail', act_kind: 'send_email' } });
  });
});

describe('the OpenAI Agents SDK: guardTool in run()', () => {
  const script = () =>
    new ScriptedModel([
      modelResponse([functionCall('send_email', { to: 'ops@example.invalid' }, { callId: 'call-1' })]),
      modelResponse([assistantMessage('done')]),
    ]);

  it('lets the call through its input guardrail on PERMIT; a blown fuse rejects it with the decision, and the tool never runs', async () => {
    const sent: string[] = [];
    const sendEmail = guardAgentsTool(
      agentsTool({
        name: 'send_email',
        description: 'Send an email',
        parameters: z.object({ to: z.string() }),
        execute: async ({ to }) => (sent.push(to), `sent to ${to}`),
      }),
      { fuse, kind: 'send_email', gate },
    );

    const ok = await run(new Agent({ name: 'ops', model: script(), tools: [sendEmail] }), 'email ops');
    expect(sent).toEqual(['ops@example.invalid']);
    expect(ok.finalOutput).toBe('done');
    expect(ok.toolInputGuardrailResults[0]!.output).toMatchObject({
      behavior: { type: 'allow' },
      outputInfo: { fusegate: { decision: 'PERMIT' } },
    });

    await gate.blowFuse(fuse);
    const model = script();
    const refused = await run(new Agent({ name: 'ops', model, tools: [sendEmail] }), 'email ops');
    expect(sent).toHaveLength(1);
    const info = refused.toolInputGuardrailResults[0]!.output as {
      behavior: { type: string; message: string };
      outputInfo: { fusegate: { decision: string; receipt_id: string } };
    };
    expect(info.behavior.type).toBe('rejectContent');
    expect(info.outputInfo.fusegate.decision).toBe('DENY');
    // What the model read back as the tool's output.
    const input = JSON.stringify(model.calls[1]!.request.input);
    expect(input).toContain('DENY');
    expect(input).toContain(info.outputInfo.fusegate.receipt_id);
    expect(await receiptOf(info.outputInfo.fusegate)).toMatchObject({ decision: 'DENY', data: { tool: 'send_email' } });
  });
});

describe('LangChain.js: guardTool in createAgent', () => {
  /** A model that calls send_email once, then says it is done. */
  const model = () =>
    fakeModel()
      .respondWithTools([{ name: 'send_email', args: { to: 'ops@example.invalid' }, id: 'call-1' }])
      .respond(new AIMessage('done'));

  it('runs the tool on PERMIT; a blown fuse answers a ToolMessage with status "error" naming the decision, and the tool never runs', async () => {
    const sent: string[] = [];
    const sendEmail = guardLangchainTool(
      langchainTool(async ({ to }: { to: string }) => (sent.push(to), `sent to ${to}`), {
        name: 'send_email',
        description: 'Send an email',
        schema: z.object({ to: z.string() }),
      }),
      { fuse, kind: 'send_email', gate },
    );

    const ok = await createAgent({ model: model(), tools: [sendEmail] }).invoke({ messages: [{ role: 'user', content: 'email ops' }] });
    expect(sent).toEqual(['ops@example.invalid']);
    const okTool = ok.messages.find((m) => m.getType() === 'tool')!;
    expect(okTool.content).toBe('sent to ops@example.invalid');

    await gate.blowFuse(fuse);
    const refused = await createAgent({ model: model(), tools: [sendEmail] }).invoke({
      messages: [{ role: 'user', content: 'email ops' }],
    });
    expect(sent).toHaveLength(1);
    const msg = refused.messages.find((m) => m.getType() === 'tool') as unknown as {
      status: string;
      content: string;
      artifact: { fusegate: { decision: string; receipt_id: string } };
    };
    expect(msg.status).toBe('error');
    expect(msg.content).toContain('DENY');
    expect(msg.content).toContain(msg.artifact.fusegate.receipt_id);
    expect(await receiptOf(msg.artifact.fusegate)).toMatchObject({
      decision: 'DENY',
      data: { tool: 'send_email', act_kind: 'send_email' },
    });

    // Called directly with its arguments (no tool call), a refused tool throws.
    await expect(sendEmail.invoke({ to: 'x@example.invalid' })).rejects.toBeInstanceOf(FuseGateRefusal);
    expect(sent).toHaveLength(1);
  });
});
