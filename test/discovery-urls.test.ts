/**
 * What is served names the running service (issue 15, point 11): the build is
 * made for placeholder origins and the server puts its own BASE_URL and
 * SITE_URL into every built document, with ETags over the served bytes.
 */
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join, relative, sep } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

const ROOT = join(process.cwd(), 'dist/client');
const TEXT = /\.(html|json|txt|xml|webmanifest|svg)$|\/[^./]+$/;

function builtPaths(dir = ROOT, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) builtPaths(full, out);
    else out.push('/' + relative(ROOT, full).split(sep).join('/'));
  }
  return out;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('a production BASE_URL and SITE_URL are what every served document names', () => {
  // Names that never resolve (RFC 6761): nothing a server serving them could call.
  const GATE = 'https://gate.fusegate.invalid';
  const SITE = 'https://www.fusegate.invalid';
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ NODE_ENV: 'production', BASE_URL: GATE, SITE_URL: SITE });
  });
  afterAll(() => s.stop());

  it('no built text document served carries the build origin or localhost', async () => {
    const paths = builtPaths().filter((p) => TEXT.test(p) && !p.startsWith('/_astro/'));
    expect(paths.length).toBeGreaterThan(50);
    for (const p of paths) {
      const url = p.endsWith('/index.html') ? p.slice(0, -'index.html'.length) : p;
      const r = await s.fetch(url);
      const text = await r.text();
      expect(text, p).not.toMatch(/fusegate-build\.invalid/);
      // The docs pages may show laptop examples (localhost:4321); every other document advertises.
      if (!p.startsWith('/docs/')) expect(text, p).not.toMatch(/localhost:4321/);
    }
  });

  it('gate.json, x402, catalogs, sitemap, robots, canonical links and the reference curl lines name the running service', async () => {
    const gate = await (await s.fetch('/.well-known/gate.json')).json();
    expect(gate.base_url).toBe(GATE);
    // /.well-known/x402 is a companion-site document (SPEC 4.2), served live from the running config.
    const x402 = await (await s.fetch('/.well-known/x402')).json();
    expect(x402.base_url).toBe(SITE);
    const bazaar = await (await s.fetch('/.well-known/x402-bazaar.json')).text();
    expect(bazaar).toMatch(new RegExp(`${GATE}|${SITE}`));
    const clear = await (await s.fetch('/api/v1/clear/catalog')).json();
    // Companion-site catalogs live at {site_url} (SPEC 4.2): their base_url is the site.
    expect(clear.base_url).toBe(SITE);
    expect(clear.landing.startsWith(`${SITE}/`)).toBe(true);
    const foundry = await (await s.fetch('/api/v1/foundry/catalog.json')).json();
    expect(foundry.base_url).toBe(SITE);
    expect(await (await s.fetch('/sitemap.xml')).text()).toContain(`<loc>${SITE}/pricing</loc>`);
    expect(await (await s.fetch('/robots.txt')).text()).toContain(`${SITE}/sitemap.xml`);
    const pricing = await (await s.fetch('/pricing')).text();
    expect(pricing).toMatch(new RegExp(`<link rel="canonical" href="${SITE}/pricing/?"`));
    const reference = await (await s.fetch('/reference/system')).text();
    expect(reference).toContain(`curl -X GET &#39;${GATE}/health&#39;`);
  });

  it("ETags are over the served bytes: they revalidate, and differ from another URL's", async () => {
    const r = await s.fetch('/.well-known/gate.json');
    const etag = r.headers.get('etag')!;
    expect((await s.fetch('/.well-known/gate.json', { headers: { 'if-none-match': etag } })).status).toBe(304);
    const other = await startTestServer({ BASE_URL: 'https://gate.other.example', SITE_URL: 'https://other.example' });
    try {
      const o = await other.fetch('/.well-known/gate.json');
      expect((await o.json()).base_url).toBe('https://gate.other.example');
      expect(o.headers.get('etag')).not.toBe(etag);
    } finally {
      await other.stop();
    }
  });

  it('/health is ok: the advertised URLs are not on this machine', async () => {
    const h = await (await s.fetch('/health')).json();
    expect(h).toMatchObject({ status: 'ok', base_url: GATE, site_url: SITE });
  });
});

describe('default URLs follow PORT', () => {
  it('PORT=n with no BASE_URL advertises http://localhost:n everywhere, and /health says ok', async () => {
    const port = await freePort();
    const s = await startTestServer({ PORT: String(port) });
    try {
      const local = `http://localhost:${port}`;
      expect((await (await s.fetch('/.well-known/gate.json')).json()).base_url).toBe(local);
      expect(await (await s.fetch('/sitemap.xml')).text()).toContain(`<loc>${local}/pricing</loc>`);
      expect(await (await s.fetch('/health')).json()).toMatchObject({ status: 'ok', base_url: local });
    } finally {
      await s.stop();
    }
  });

  it('PORT 0 resolves to the port listened on', async () => {
    const s = await startTestServer({ PORT: '0' });
    try {
      const port = new URL(s.url).port;
      expect(s.config.BASE_URL).toBe(`http://localhost:${port}`);
      expect((await (await s.fetch('/health')).json()).status).toBe('ok');
    } finally {
      await s.stop();
    }
  });

  it('/health is 503 when it advertises a local URL on another port (not this service)', async () => {
    const s = await startTestServer({ BASE_URL: 'http://localhost:1', SITE_URL: 'http://localhost:1' });
    try {
      const r = await s.fetch('/health');
      expect(r.status).toBe(503);
      expect((await r.json()).problems.join(' ')).toMatch(/not on the port this service listens on/);
    } finally {
      await s.stop();
    }
  });
});
