/**
 * What the proxy asks the gate before it forwards a `tools/call`: the rule of
 * the kinds file for the tool (./kinds-file.ts), else the act kind the gate's
 * classifier gives the tool's name and description, asked once per tool and
 * remembered for the life of the proxy (a classify is charged and receipted
 * like any act). No classification: a hop on the fuse alone.
 *
 * Never caches a verdict: every call hops, so a fuse blown between two calls
 * stops the second one.
 */
import type { FuseGateClient } from '../client.ts';
import { askGate, type AskOptions, type GateVerdict } from '../guard/gate-check.ts';
import { transferOf, type ToolRule } from './kinds-file.ts';

/** The classifier reads at most this much of a tool's name and description (POST /v1/classify's text limit). */
const CLASSIFY_TEXT_MAX = 4000;

export class ToolGate {
  readonly #gate: FuseGateClient;
  readonly #fuse: string;
  readonly #rules: ReadonlyMap<string, ToolRule>;
  readonly #classified = new Map<string, Promise<string | undefined>>();
  readonly #ask: AskOptions;

  constructor(gate: FuseGateClient, fuse: string, rules: ReadonlyMap<string, ToolRule> = new Map(), ask: AskOptions = {}) {
    this.#gate = gate;
    this.#fuse = fuse;
    this.#rules = rules;
    this.#ask = ask;
  }

  /** The verdict on one call of `tool` with `args`; `description` is the tool's, as the upstream listed it. */
  async check(tool: string, args: Record<string, unknown>, description: string | undefined): Promise<GateVerdict> {
    const rule = this.#rules.get(tool);
    if (rule && 'rail' in rule) {
      return askGate(
        this.#gate,
        { fuse: this.#fuse, tool, rail: rule.rail, transfer: transferOf(rule, args), mandate: rule.mandate },
        this.#ask,
      );
    }
    let kind: string | undefined;
    try {
      kind = rule ? rule.kind : await this.#classify(tool, description);
    } catch (e) {
      return { action: 'refuse', decision: null, reason: `the tool could not be classified: ${(e as Error).message}` };
    }
    return askGate(this.#gate, { fuse: this.#fuse, tool, kind });
  }

  /** The act kind of a tool the kinds file does not name; a failed classify is not remembered (the next call asks again). */
  #classify(tool: string, description: string | undefined): Promise<string | undefined> {
    let kind = this.#classified.get(tool);
    if (!kind) {
      // "send_email" reads as the words "send email", as the classifier's keywords are written.
      const text = [tool.replace(/[_.-]+/g, ' '), description].filter(Boolean).join(': ').slice(0, CLASSIFY_TEXT_MAX);
      kind = this.#gate.classify({ text }).then((c) => (typeof c.act_kind === 'string' ? c.act_kind : undefined));
      this.#classified.set(tool, kind);
      kind.catch(() => this.#classified.delete(tool));
    }
    return kind;
  }
}
