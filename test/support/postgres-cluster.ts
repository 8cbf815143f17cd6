/**
 * A throw-away PostgreSQL cluster for tests and benches, started from the
 * installed binaries (Debian's postgresql 15: /usr/lib/postgresql/15/bin, or
 * PG_BIN). As root (CI), every PostgreSQL program runs as the `postgres` user,
 * which PostgreSQL requires; the cluster lives in a temporary folder that user
 * owns, listens on a free loopback port and keeps its socket in that folder.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Cluster {
  dir: string;
  port: number;
  /** A URL for database `db` (the superuser `postgres`, no password: trust on loopback). */
  url(db?: string): string;
  /** Runs SQL with psql against database `db`; returns its output. */
  psql(sql: string, db?: string): string;
  stop(mode?: 'fast' | 'immediate'): void;
}

/** The folder of PostgreSQL's server programs, or undefined when none is installed. */
export function postgresBin(): string | undefined {
  const candidates = [
    process.env.PG_BIN,
    '/usr/lib/postgresql/15/bin',
    ...(existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .sort()
          .reverse()
          .map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
  ];
  return candidates.find((d): d is string => !!d && existsSync(join(d, 'initdb')));
}

const asRoot = process.getuid?.() === 0;
/** The uid and gid of the `postgres` user (root may not run the server). */
function postgresUser(): { uid: number; gid: number } {
  const out = execFileSync('id', ['postgres'], { encoding: 'utf8' });
  return { uid: Number(/uid=(\d+)/.exec(out)![1]), gid: Number(/gid=(\d+)/.exec(out)![1]) };
}

/** Runs a PostgreSQL program, as the `postgres` user when we are root. */
export function runPg(bin: string, args: string[], opts: { cwd?: string; timeout?: number } = {}): string {
  const user = asRoot ? postgresUser() : undefined;
  const r = spawnSync(bin, args, {
    encoding: 'utf8',
    cwd: opts.cwd ?? tmpdir(),
    timeout: opts.timeout ?? 120_000,
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
    env: { ...process.env, LC_ALL: 'C', PGCONNECT_TIMEOUT: '10' },
  });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** A loopback port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A folder the `postgres` user owns (mode 0700, as initdb wants). */
export function postgresDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (asRoot) {
    const { uid, gid } = postgresUser();
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  return dir;
}

export interface ClusterOptions {
  /** Settings written to postgresql.conf. */
  settings?: Record<string, string | number>;
  /** Initialise a new data folder (default), or start an existing one (a standby made by pg_basebackup). */
  dataDir?: string;
  port?: number;
}

/** initdb + pg_ctl start in a new temporary folder; resolves once it accepts connections. */
export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const bin = postgresBin();
  if (!bin)
    throw new Error('PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin; set PG_BIN, or apt-get install postgresql)');
  const dir = opts.dataDir ? join(opts.dataDir, '..') : postgresDir('fusegate-pg-');
  const data = opts.dataDir ?? join(dir, 'data');
  const port = opts.port ?? (await freePort());
  if (!opts.dataDir) runPg(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const settings: Record<string, string | number> = {
    listen_addresses: "'127.0.0.1'",
    port,
    unix_socket_directories: `'${dir}'`,
    max_connections: 300,
    shared_buffers: "'64MB'",
    logging_collector: 'off',
    ...opts.settings,
  };
  const conf =
    Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join('\n') + '\n';
  // A second file included last, so that a standby's own settings (written by pg_basebackup) stay.
  writeFileSync(join(data, 'fusegate-test.conf'), conf);
  if (asRoot) {
    const { uid, gid } = postgresUser();
    chownSync(join(data, 'fusegate-test.conf'), uid, gid);
  }
  runPg('/bin/sh', [
    '-c',
    `grep -q fusegate-test.conf ${data}/postgresql.conf || echo "include 'fusegate-test.conf'" >> ${data}/postgresql.conf`,
  ]);
  runPg(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, `server-${port}.log`), '-w', '-t', '60', 'start']);
  const cluster: Cluster = {
    dir,
    port,
    url: (db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`,
    psql: (sql, db = 'postgres') =>
      execFileSync(
        'psql',
        ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', db, '-c', sql],
        { encoding: 'utf8', env: { ...process.env, PGCONNECT_TIMEOUT: '10' } },
      ),
    stop(mode = 'fast') {
      try {
        runPg(join(bin, 'pg_ctl'), ['-D', data, '-m', mode, '-w', 'stop']);
      } catch {
        /* already stopped */
      }
    },
  };
  return cluster;
}

/** Stops a cluster and removes its folder. */
export function removeCluster(c: Cluster): void {
  c.stop('immediate');
  rmSync(c.dir, { recursive: true, force: true });
}
