/**
 * `npm run bench`: every section, then one table. Each figure is a ratio
 * against a baseline measured in the same run. BENCH_SECONDS and
 * BENCH_CONNECTIONS tune the load; BENCH_ONLY=a,b runs those sections;
 * BENCH_BEFORE=dir adds an earlier tree's figures beside this one's (before.ts).
 */
import { benchBefore } from './before.ts';
import { benchCrypto } from './crypto.ts';
import { benchFoundation } from './foundation.ts';
import { benchGate } from './gate.ts';
import { benchPas } from './pas.ts';
import { benchLedger } from './ledger.ts';
import { benchMetered } from './metered.ts';
import { benchPrefinality } from './prefinality.ts';
import { printTable } from './lib.ts';
import { benchPostgres } from './postgres.ts';
import { benchProxy } from './proxy.ts';
import { benchRequestLog } from './request-log.ts';
import { benchSite } from './site.ts';
import { benchTrust } from './trust.ts';
import { benchWitness } from './witness.ts';
import { NODE } from '../src/crypto/node.ts';
import { usePlatform } from '../src/crypto/platform.ts';

// What runs in this process (log building, proof checks) hashes and verifies as the server does.
usePlatform(NODE);

const SECTIONS: Record<string, () => Promise<void>> = {
  before: benchBefore,
  foundation: benchFoundation,
  gate: benchGate,
  'request-log': benchRequestLog,
  site: benchSite,
  prefinality: benchPrefinality,
  trust: benchTrust,
  witness: benchWitness,
  pas: benchPas,
  ledger: benchLedger,
  metered: benchMetered,
  proxy: benchProxy,
  postgres: benchPostgres,
  // Last: it installs the portable platform for a while, and the sections before run on node:crypto only.
  crypto: benchCrypto,
};

const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const unknown = only?.filter((name) => !(name in SECTIONS)) ?? [];
if (unknown.length) throw new Error(`BENCH_ONLY names no section ${unknown.join(', ')}; the sections: ${Object.keys(SECTIONS).join(', ')}`);
for (const [name, run] of Object.entries(SECTIONS)) {
  if (only && !only.includes(name)) continue;
  console.log(`\n# ${name}`);
  await run();
}
printTable();
