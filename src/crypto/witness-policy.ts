/**
 * Witness policies: which witnesses a log submits its checkpoints to, and which
 * of their cosignatures a verifier requires (the quorum). The text format is
 * the one of Sigsum and Tessera policies, with C2SP cosignature/v1 vkeys:
 *
 *   # comment
 *   witness <name> <vkey> <submission URL prefix>
 *   group <name> <any|all|K> <member>...
 *   quorum <name>
 *
 * A member is a witness or an earlier group; names are unique; `quorum` names
 * one witness or group, once (or `none`: cosignatures are collected, none is
 * required). The parser is strict and names the line of every mistake.
 */
import { equalBytes } from './bytes.ts';
import { cosignersOf, parseCosignerKey, type CosignerKey } from './cosignature.ts';

export interface PolicyWitness {
  name: string;
  key: CosignerKey;
  /** The submission prefix, without a trailing slash: requests go to `${url}/add-checkpoint`. */
  url: string;
}

export interface PolicyGroup {
  name: string;
  /** How many members must hold. */
  threshold: number;
  members: string[];
}

export interface WitnessPolicy {
  witnesses: PolicyWitness[];
  groups: PolicyGroup[];
  /** The witness or group that must hold, or null for `quorum none`. */
  quorum: string | null;
}

export class PolicyError extends Error {
  override name = 'PolicyError';
  readonly line: number;
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.line = line;
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$/;

/** Parses a policy text; throws a PolicyError naming the line of the first mistake. */
export function parseWitnessPolicy(text: string): WitnessPolicy {
  const witnesses: PolicyWitness[] = [];
  const groups: PolicyGroup[] = [];
  const names = new Set<string>();
  let quorum: string | null | undefined;
  let quorumLine = 0;
  text.split('\n').forEach((raw, i) => {
    const n = i + 1;
    const fail = (m: string): never => {
      throw new PolicyError(n, m);
    };
    const words = raw
      .replace(/#.*$/, '')
      .trim()
      .split(/[ \t]+/)
      .filter(Boolean);
    if (words.length === 0) return;
    const [keyword, ...args] = words;
    const newName = (name: string) => {
      if (!NAME.test(name)) fail(`"${name}" is not a valid name (letters, digits, . _ / : -)`);
      if (name === 'none') fail('"none" is reserved for "quorum none"');
      if (names.has(name)) fail(`the name "${name}" is already defined`);
      names.add(name);
    };
    switch (keyword) {
      case 'witness': {
        if (args.length !== 3) fail('expected "witness <name> <vkey> <submission URL prefix>"');
        const [name, vkey, prefix] = args as [string, string, string];
        newName(name);
        let key: CosignerKey;
        try {
          key = parseCosignerKey(vkey);
        } catch (e) {
          return fail(`witness ${name}: bad vkey: ${(e as Error).message}`);
        }
        let url: URL;
        try {
          url = new URL(prefix);
        } catch {
          return fail(`witness ${name}: "${prefix}" is not a URL`);
        }
        if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`witness ${name}: the submission prefix must be an http(s) URL`);
        if (url.search || url.hash) fail(`witness ${name}: the submission prefix must have no query or fragment`);
        if (witnesses.some((w) => equalBytes(w.key.keyId, key.keyId) && equalBytes(w.key.raw, key.raw)))
          fail(`witness ${name}: the same key is listed twice`);
        witnesses.push({ name, key, url: url.href.replace(/\/+$/, '') });
        return;
      }
      case 'group': {
        if (args.length < 3) fail('expected "group <name> <any|all|K> <member>..."');
        const [name, threshold, ...members] = args as [string, string, ...string[]];
        for (const m of members) {
          if (!names.has(m)) fail(`group ${name}: member "${m}" is not a witness or group defined above`);
        }
        if (new Set(members).size !== members.length) fail(`group ${name}: a member is listed twice`);
        let k: number;
        if (threshold === 'any') k = 1;
        else if (threshold === 'all') k = members.length;
        else if (/^[1-9][0-9]*$/.test(threshold)) k = Number(threshold);
        else return fail(`group ${name}: the threshold must be any, all or a number, not "${threshold}"`);
        if (k > members.length) fail(`group ${name}: threshold ${k} is more than its ${members.length} members`);
        newName(name);
        groups.push({ name, threshold: k, members });
        return;
      }
      case 'quorum': {
        if (args.length !== 1) fail('expected "quorum <name>"');
        if (quorum !== undefined) fail(`quorum is already set on line ${quorumLine}`);
        const [name] = args as [string];
        if (name !== 'none' && !names.has(name)) fail(`quorum: "${name}" is not a witness or group defined above`);
        quorum = name === 'none' ? null : name;
        quorumLine = n;
        return;
      }
      default:
        fail(`unknown keyword "${keyword}" (expected witness, group or quorum)`);
    }
  });
  if (quorum === undefined) throw new PolicyError(text.split('\n').length, 'the policy has no "quorum" line');
  return { witnesses, groups, quorum };
}

/** Whether the quorum holds when exactly the witnesses named in `cosigned` (policy names) cosigned. */
export function quorumHolds(policy: WitnessPolicy, cosigned: ReadonlySet<string>): boolean {
  if (policy.quorum === null) return true;
  const groups = new Map(policy.groups.map((g) => [g.name, g]));
  const holds = (name: string): boolean => {
    const g = groups.get(name);
    if (!g) return cosigned.has(name);
    return g.members.filter(holds).length >= g.threshold;
  };
  return holds(policy.quorum);
}

/** The policy as text again (what a receipt's evidence carries, so that a verifier can pin it). */
export function formatWitnessPolicy(policy: WitnessPolicy): string {
  const threshold = (g: PolicyGroup) =>
    g.threshold === 1 && g.members.length > 1 ? 'any' : g.threshold === g.members.length ? 'all' : String(g.threshold);
  return (
    [
      ...policy.witnesses.map((w) => `witness ${w.name} ${w.key.vkey} ${w.url}`),
      ...policy.groups.map((g) => `group ${g.name} ${threshold(g)} ${g.members.join(' ')}`),
      `quorum ${policy.quorum ?? 'none'}`,
    ].join('\n') + '\n'
  );
}

export interface Witnessed {
  /** The policy's names of the witnesses that cosigned, in policy order. */
  cosigned_by: string[];
  quorum: string | null;
  quorum_holds: boolean;
}

/**
 * Which of the policy's witnesses cosigned a checkpoint note, and whether they
 * make its quorum. Rejects on a tampered cosignature, naming the witness as
 * the policy does.
 */
export async function witnessesOf(note: string, policy: WitnessPolicy): Promise<Witnessed> {
  const byVkey = new Map(policy.witnesses.map((w) => [w.key.vkey, w.name]));
  const found = new Set(
    (
      await cosignersOf(
        note,
        policy.witnesses.map((w) => w.key),
        (k) => byVkey.get(k.vkey)!,
      )
    ).map((c) => c.vkey),
  );
  const names = policy.witnesses.filter((w) => found.has(w.key.vkey)).map((w) => w.name);
  return { cosigned_by: names, quorum: policy.quorum, quorum_holds: policy.witnesses.length > 0 && quorumHolds(policy, new Set(names)) };
}
