/** Signed-in pages without a browser. */
import type { TestServer } from './server.ts';

/** A browser-like form client: keeps cookies, sends our Origin and the form's CSRF token. */
export function formClient(s: TestServer) {
  const jar = new Map<string, string>();
  const store = (r: Response) => {
    for (const c of r.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      jar.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
    return r;
  };
  const cookie = () =>
    [...jar]
      .filter(([, v]) => v)
      .map(([k, v]) => `${k}=${v}`)
      .join('; ');
  return {
    jar,
    async get(path: string) {
      return store(await fetch(s.url + path, { headers: { cookie: cookie() }, redirect: 'manual' }));
    },
    async post(path: string, fields: Record<string, string>, from = s.url) {
      const page = await (
        await this.get(path.startsWith('/reset/') ? path : path === '/signup' || path === '/signin' ? path : '/dashboard')
      ).text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
      return store(
        await fetch(s.url + path, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie: cookie(), origin: from, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ csrf, ...fields }),
        }),
      );
    },
  };
}
