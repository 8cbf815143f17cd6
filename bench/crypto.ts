/**
 * The crypto core's hashing against bare node:crypto, in this process: what
 * taking SHA-256 from the installed platform (src/crypto/platform.ts) costs the
 * tree math, on the Node platform the server installs and on the portable one
 * the browser runs (@noble/hashes). Rates are per CPU second of this process
 * (process.cpuUsage), so other work on the machine does not count; each figure
 * is the median of BENCH_ROUNDS paired rounds, core then baseline.
 */
import { hash } from 'node:crypto';
import { leafHash, nodeHash, proveInclusion, inclusionRoot, verifyInclusion } from '../src/crypto/merkle.ts';
import { NODE } from '../src/crypto/node.ts';
import { currentPlatform, PORTABLE, usePlatform, type Platform } from '../src/crypto/platform.ts';
import { BENCH_ROUNDS, BENCH_SECONDS, report } from './lib.ts';

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Calls per CPU second of `f`, run for `ms` of CPU. */
function rate(f: () => unknown, ms: number): number {
  let n = 0;
  const start = cpuMs();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 64; i++) f();
    n += 64;
    now = cpuMs();
  }
  return (n * 1000) / (now - start);
}

/** Median over paired rounds of ours/baseline, with the rates of the median round. */
function paired(ours: () => unknown, baseline: () => unknown): { ours: number; base: number; ratio: number; range: string } {
  const ms = (BENCH_SECONDS * 1000) / 8;
  const rounds = Array.from({ length: BENCH_ROUNDS }, () => {
    const o = rate(ours, ms);
    const b = rate(baseline, ms);
    return { ours: o, base: b, ratio: o / b };
  }).sort((a, b) => a.ratio - b.ratio);
  const mid = rounds[Math.floor(rounds.length / 2)]!;
  return {
    ...mid,
    range: rounds.length > 1 ? ` (rounds ${rounds[0]!.ratio.toFixed(2)}-${rounds[rounds.length - 1]!.ratio.toFixed(2)})` : '',
  };
}

const perSecond = (n: number) => `${Math.round(n).toLocaleString('en-US')}/s`;

export async function benchCrypto(): Promise<void> {
  const left = leafHash(new TextEncoder().encode('left'));
  const right = leafHash(new TextEncoder().encode('right'));
  const node = Buffer.concat([Buffer.from([1]), left, right]);
  // An inclusion proof in a tree of 1,000,000 leaves: 20 hashes, checked against the root they lead to.
  const size = 1_000_000;
  const index = 765_432;
  const proof = proveInclusion(index, size).map((_, i) => leafHash(new TextEncoder().encode(`sibling ${i}`)));
  const root = inclusionRoot(index, size, left, proof);
  const twentyHashes = () => {
    for (let i = 0; i < proof.length; i++) hash('sha256', node, 'buffer');
  };
  const before = currentPlatform();
  const on = (platform: Platform, name: string) => {
    usePlatform(platform);
    const h = paired(
      () => nodeHash(left, right),
      () => hash('sha256', node, 'buffer'),
    );
    report(
      'crypto',
      `node hash (64-byte node), core on ${name}${h.range}`,
      perSecond(h.ours),
      `${perSecond(h.base)} crypto.hash`,
      `${h.ratio.toFixed(2)}x`,
    );
    const v = paired(() => verifyInclusion(index, size, left, proof, root), twentyHashes);
    report(
      'crypto',
      `inclusion proof check (20 hashes, 10^6 leaves), core on ${name}${v.range}`,
      perSecond(v.ours),
      `${perSecond(v.base)} 20 crypto.hash`,
      `${v.ratio.toFixed(2)}x`,
    );
  };
  try {
    on(NODE, 'node:crypto (the server)');
    on(PORTABLE, '@noble/hashes (the browser)');
  } finally {
    usePlatform(before);
  }
}
