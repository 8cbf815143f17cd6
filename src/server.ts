/**
 * The entry point: one process, one port, both surfaces (SPEC 4.1 gate service
 * and 4.2 companion site). `npm start` builds the site first, then runs this.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig, withListeningPort, type Config } from './config.ts';
import { ed25519Signer } from './crypto/ed25519.ts';
import { loadKeyring } from './crypto/keys.ts';
import { NODE } from './crypto/node.ts';
import { usePlatform } from './crypto/platform.ts';
import { createApp, type App } from './api/app.ts';
import { leasedJob, type LeasedJob } from './api/jobs.ts';
import type { AppContext } from './api/context.ts';
import { logOrigin } from './ledger/checkpoint.ts';
import { describeDatabase, openLedger } from './ledger/db.ts';
import { RECEIPTS_LOG, sealReceipts } from './ledger/seals.ts';
import { applyConnectionLimits, httpServerOptions } from './net/http-limits.ts';
import { StartupError, startupStep } from './startup-error.ts';
import { parseWitnessPolicy } from './crypto/witness-policy.ts';
import { readFile } from 'node:fs/promises';
import { VERSION } from './version.ts';
import { requestLogOf } from './api/request-log.ts';

export interface RunningServer {
  url: string;
  ctx: AppContext;
  app: App;
  server: Server;
  /** The background jobs, each run here only while this node holds its lease. */
  jobs: LeasedJob[];
  close(): Promise<void>;
}

function makeLogger(level: Config['LOG_LEVEL']): AppContext['log'] {
  return (lvl, msg, fields) => {
    if (level === 'silent' || (level === 'error' && lvl !== 'error')) return;
    const line = JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields });
    (lvl === 'error' ? process.stderr : process.stdout).write(line + '\n');
  };
}

/** Opens the ledger, loads the keys and listens. PORT 0 picks a free port (tests). */
export async function startServer(initial: Config): Promise<RunningServer> {
  // The crypto core hashes and verifies with node:crypto here (docs/trust-core.md, "One core").
  usePlatform(NODE);
  const log = makeLogger(initial.LOG_LEVEL);
  // Before anything is opened: a malformed policy stops the start, naming its line.
  const witnessPolicy = initial.WITNESS_POLICY
    ? await startupStep(`cannot load the witness policy ${initial.WITNESS_POLICY}`, async () =>
        parseWitnessPolicy(await readFile(initial.WITNESS_POLICY!, 'utf8')),
      )
    : null;
  const ledger = await startupStep(`cannot open the database ${describeDatabase(initial.DATABASE_URL)}`, () =>
    openLedger(initial, (m) => log('error', m)),
  );
  const keyring = await startupStep(
    `cannot load the signing keys (${initial.SIGNING_KEY_JWK ? 'SIGNING_KEY_JWK' : initial.SIGNING_KEY_FILE})`,
    () => loadKeyring(initial),
  ).catch(async (e: unknown) => {
    await ledger.close();
    throw e;
  });
  // Listen first, so that with PORT 0 the advertised URLs name the port actually used.
  let handler: RequestListener = (_req, res) => res.writeHead(503).end();
  const server = createServer(httpServerOptions(initial), (req, res) => handler(req, res));
  applyConnectionLimits(server, initial);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(initial.PORT, initial.HOST, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const config = withListeningPort(initial, port);
  const ctx: AppContext = { config, ledger, keyring, version: VERSION, log, witnessPolicy };
  // Every batch that appends receipts ends with one seal of the receipts log (docs/pipeline.md).
  const receiptsOrigin = logOrigin(config.SITE_URL, RECEIPTS_LOG);
  ledger.onBatchEnd(async (tx, batch) => void (await sealReceipts(tx, receiptsOrigin, ctx.keyring.current, batch.receiptsHead)));
  const app = createApp(ctx);
  handler = app.node;
  const url = `http://127.0.0.1:${port}`;
  // Each job runs on the one node of the database that holds its lease; this node's name for itself:
  const node = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  const jobs = app.router.jobs.map((job) => leasedJob(ctx, job, node));
  // Start-up work of a job (the first clearing checkpoint of a fresh deployment) is done before the server reports ready.
  await Promise.all(jobs.map((job) => job.start()));
  log('info', 'listening', { url, base_url: config.BASE_URL, site_url: config.SITE_URL, kid: keyring.current.kid, signer: ed25519Signer });
  return {
    url,
    ctx,
    app,
    server,
    jobs,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.all(jobs.map((job) => job.stop()));
      await requestLogOf(ctx).close();
      await ledger.close();
    },
  };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`fusegate: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  let running: RunningServer;
  try {
    running = await startServer(config);
  } catch (e) {
    if (e instanceof StartupError || (e as NodeJS.ErrnoException).code === 'EADDRINUSE' || (e as NodeJS.ErrnoException).code === 'EACCES') {
      process.stderr.write(`fusegate: ${(e as Error).message.split('\n')[0]}\n`);
      process.exit(2);
    }
    throw e;
  }
  process.on('SIGHUP', () => {
    loadKeyring(config)
      .then((k) => {
        running.ctx.keyring = k;
        running.ctx.log('info', 'signing keys reloaded', { kid: k.current.kid });
      })
      .catch((e) => running.ctx.log('error', 'signing key reload failed', { error: String(e) }));
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      running.ctx.log('info', 'shutting down', { signal });
      running.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

if (import.meta.main) await main();
