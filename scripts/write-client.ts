/**
 * Build step: writes src/client-operations.ts, the typed client's operation
 * table, from the operations' declarations (src/api/client-gen.ts). The file is
 * committed; test/operations.test.ts checks it is current.
 */
import { writeFileSync } from 'node:fs';
import { clientOperationsSource } from '../src/api/client-gen.ts';
import { describeRoutes } from '../src/api/describe.ts';
import { loadConfig } from '../src/config.ts';

const router = describeRoutes(loadConfig(process.env));
const out = new URL('../src/client-operations.ts', import.meta.url);
writeFileSync(out, clientOperationsSource(router.routes));
console.log('client: operations -> src/client-operations.ts');
