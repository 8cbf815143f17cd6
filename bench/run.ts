/**
 * `npm run bench`: every section, then one table. Each figure is a ratio
 * against a baseline measured in the same run. BENCH_SECONDS and
 * BENCH_CONNECTIONS tune the load; BENCH_ONLY=name runs one section.
 */
import { benchFoundation } from './foundation.ts';
import { benchGate } from './gate.ts';
import { benchPas } from './pas.ts';
import { benchLedger } from './ledger.ts';
import { benchMetered } from './metered.ts';
import { benchPrefinality } from './prefinality.ts';
import { printTable } from './lib.ts';
import { benchProxy } from './proxy.ts';
import { benchSite } from './site.ts';
import { benchTrust } from './trust.ts';
import { benchWitness } from './witness.ts';

const SECTIONS: Record<string, () => Promise<void>> = {
  foundation: benchFoundation,
  gate: benchGate,
  site: benchSite,
  prefinality: benchPrefinality,
  trust: benchTrust,
  witness: benchWitness,
  pas: benchPas,
  ledger: benchLedger,
  metered: benchMetered,
  proxy: benchProxy,
};

const only = process.env.BENCH_ONLY;
for (const [name, run] of Object.entries(SECTIONS)) {
  if (only && only !== name) continue;
  console.log(`\n# ${name}`);
  await run();
}
printTable();
