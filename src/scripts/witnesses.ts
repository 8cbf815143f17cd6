/**
 * Witness cosignatures checked in the browser (C2SP tlog-cosignature), with
 * the policy the service publishes at GET /api/v1/logs/{log} (never the one a
 * receipt's answer states): which witnesses cosigned a checkpoint note and
 * whether they make the quorum. The same checks as crypto/cosignature.ts and
 * crypto/witness-policy.ts, on WebCrypto.
 */
import { CheckFailed, ed25519Verify, equalBytes, fromBase64, sha256, utf8 } from './tlog.ts';

interface Witness {
  name: string;
  keyName: string;
  keyId: Uint8Array;
  raw: Uint8Array;
}

export interface BrowserPolicy {
  witnesses: Witness[];
  groups: Map<string, { threshold: number; members: string[] }>;
  quorum: string | null;
}

/** Reads a policy text (witness / group / quorum lines) as the service publishes it. */
export async function parsePolicy(text: string): Promise<BrowserPolicy> {
  const p: BrowserPolicy = { witnesses: [], groups: new Map(), quorum: null };
  for (const raw of text.split('\n')) {
    const [kw, ...a] = raw.replace(/#.*$/, '').trim().split(/\s+/).filter(Boolean);
    if (kw === 'witness' && a.length === 3) {
      const [name, vkey] = a as [string, string];
      const [keyName, idHex, b64] = [vkey.slice(0, vkey.indexOf('+')), vkey.split('+')[1] ?? '', vkey.split('+').slice(2).join('+')];
      const key = fromBase64(b64);
      if (key.length !== 33 || key[0] !== 0x04) throw new CheckFailed(`witness ${name}: not a cosignature/v1 key`);
      const raw32 = key.slice(1);
      const keyId = (await sha256(new Uint8Array([...utf8(`${keyName}\n`), 0x04, ...raw32]))).slice(0, 4);
      if (Array.from(keyId, (x) => x.toString(16).padStart(2, '0')).join('') !== idHex) throw new CheckFailed(`witness ${name}: its key ID does not match its key`);
      p.witnesses.push({ name, keyName, keyId, raw: raw32 });
    } else if (kw === 'group' && a.length >= 3) {
      const [name, t, ...members] = a as [string, string, ...string[]];
      p.groups.set(name, { threshold: t === 'any' ? 1 : t === 'all' ? members.length : Number(t), members });
    } else if (kw === 'quorum' && a.length === 1) {
      p.quorum = a[0] === 'none' ? null : a[0]!;
    } else if (kw) {
      throw new CheckFailed(`the published witness policy has a line this page cannot read: ${raw}`);
    }
  }
  return p;
}

function holds(p: BrowserPolicy, name: string, cosigned: Set<string>): boolean {
  const g = p.groups.get(name);
  return g ? g.members.filter((m) => holds(p, m, cosigned)).length >= g.threshold : cosigned.has(name);
}

/** Which of the policy's witnesses cosigned `note`, and whether the quorum holds. A tampered cosignature by one of them throws. */
export async function checkCosignatures(note: string, p: BrowserPolicy): Promise<{ cosigned_by: string[]; quorum: string | null; quorum_holds: boolean }> {
  const n = note.replace(/\r\n/g, '\n');
  const split = n.lastIndexOf('\n\n');
  if (split < 0) throw new CheckFailed('malformed note: no signature block');
  const text = n.slice(0, split + 1);
  const cosigned = new Set<string>();
  for (const line of n.slice(split + 2, -1).split('\n')) {
    const m = /^\u2014 (\S+) (\S+)$/u.exec(line);
    if (!m) continue;
    const blob = fromBase64(m[2]!);
    for (const w of p.witnesses) {
      if (m[1] !== w.keyName || blob.length < 4 || !equalBytes(blob.slice(0, 4), w.keyId)) continue;
      if (blob.length !== 76) throw new CheckFailed(`the cosignature by ${w.name} is not 76 bytes`);
      const time = new DataView(blob.buffer, blob.byteOffset + 4, 8).getBigUint64(0);
      if (!(await ed25519Verify(w.raw, blob.slice(12), utf8(`cosignature/v1\ntime ${time}\n${text}`)))) throw new CheckFailed(`the cosignature by ${w.name} does not verify`);
      cosigned.add(w.name);
    }
  }
  const names = p.witnesses.map((w) => w.name).filter((x) => cosigned.has(x));
  return { cosigned_by: names, quorum: p.quorum, quorum_holds: p.quorum === null ? true : holds(p, p.quorum, cosigned) };
}
