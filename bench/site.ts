/**
 * Site figures: `astro build` wall time (no baseline: n/a), total bytes of
 * dist/client, the largest HTML page's weight against the smallest page of the
 * same build (the baseline), and GET of the stack catalog against the bare
 * node:http baseline, and again against a bare server sending the catalog's own bytes
 * (the catalog is some kilobytes of JSON; the fixed baseline answers 41 bytes).
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareHttp, fmt, report, spawnBaseline, spawnServer } from './lib.ts';

function files(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) files(full, out);
    else out.push(full);
  }
  return out;
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

async function timeBuild(): Promise<number> {
  const start = performance.now();
  const child = spawn(join(process.cwd(), 'node_modules/.bin/astro'), ['build', '--silent'], {
    env: { ...process.env, ASTRO_TELEMETRY_DISABLED: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`astro build failed (${code})`);
  return performance.now() - start;
}

export async function benchSite(): Promise<void> {
  const ms = await timeBuild();
  report('site', 'astro build time', fmt.ms(ms), 'n/a', 'n/a');

  const all = files(join(process.cwd(), 'dist/client')).map((f) => ({ f, size: statSync(f).size }));
  const total = all.reduce((a, x) => a + x.size, 0);
  report('site', `dist/client total (${all.length} files)`, kb(total), 'n/a', 'n/a');
  const pages = all.filter((x) => x.f.endsWith('.html')).sort((a, b) => a.size - b.size);
  const smallest = pages[0]!;
  const largest = pages[pages.length - 1]!;
  const name = (f: string) => f.slice(f.indexOf('dist/client') + 'dist/client'.length).replace(/index\.html$/, '');
  report(
    'site',
    `largest page ${name(largest.f)}`,
    kb(largest.size),
    `${kb(smallest.size)} (${name(smallest.f)})`,
    fmt.ratio(largest.size, smallest.size),
  );

  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const catalog = { name: 'GET /api/v1/stack/catalog', path: '/api/v1/stack/catalog' };
    await compareHttp('site', server, baseline, { ...catalog, target: { ratio: 0.8 } });
    // The same GET against a bare server sending the catalog's own bytes: what serving it costs beyond its size.
    const bodyFile = join(server.dir, 'catalog.json');
    writeFileSync(bodyFile, Buffer.from(await (await fetch(server.url + catalog.path)).arrayBuffer()));
    const sameBytes = await spawnBaseline(bodyFile);
    try {
      await compareHttp('site', server, sameBytes, { ...catalog, name: `${catalog.name} (baseline sends the same bytes)` });
    } finally {
      await sameBytes.stop();
    }
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}
