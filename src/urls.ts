/**
 * The public URLs the service advertises, in ONE place.
 *
 * - Defaults: with no BASE_URL / SITE_URL, both are http://localhost:{PORT}
 *   (PORT 4321 by default; PORT 0 picks a free port and the URLs name it once
 *   the server listens).
 * - The static build never knows where it will be served. It is built for
 *   the placeholder origins BUILD_ORIGINS (a reserved `.invalid` name, RFC
 *   6761, so a placeholder that escaped would never resolve), and the server
 *   substitutes the running service's BASE_URL and SITE_URL into every built
 *   document when it loads the build (src/api/static-site.ts). So what is
 *   served always names the running service, whatever the build machine was.
 */

/** The public URLs of the two surfaces, without a trailing slash. */
export interface Urls {
  /** Companion site ({site_url} of SPEC 4.2). */
  site: string;
  /** Gate service ({base_url} of SPEC 4.1). */
  gate: string;
  /**
   * Where a buyer reaches sales, for what is sold by contact (an email address,
   * SALES_CONTACT); only the served documents need it, the build names
   * BUILD_SALES_CONTACT in its place.
   */
  salesContact?: string;
}

export const DEFAULT_PORT = 4321;

/** The default public URL of a service listening on `port` of this machine. */
export function localUrl(port: number): string {
  return `http://localhost:${port}`;
}

/** What the build is made for; replaced by the served URLs when the build is loaded. */
export const BUILD_ORIGINS: Urls = {
  site: 'https://site.fusegate-build.invalid',
  gate: 'https://gate.fusegate-build.invalid',
};

/** An email address as SALES_CONTACT takes it: a local part and a host (localhost too, the laptop default's). */
export const EMAIL_ADDRESS = /^[^\s@<>]+@[^\s@<>]+$/;

/** The sales contact the build names; replaced by the served SALES_CONTACT like the origins. */
export const BUILD_SALES_CONTACT = 'sales@contact.fusegate-build.invalid';

/** The sales contact of a service: SALES_CONTACT, else sales@ the companion site's host (docs/pricing.md, "Sold by contact"). */
export function salesContactOf(c: { SALES_CONTACT?: string | undefined; SITE_URL: string }): string {
  return c.SALES_CONTACT ?? `sales@${new URL(c.SITE_URL).hostname}`;
}

/** The text with every build placeholder origin (and the sales contact, when given) replaced by the served value. */
export function substituteOrigins(text: string, urls: Urls): string {
  const served = text.replaceAll(BUILD_ORIGINS.site, urls.site).replaceAll(BUILD_ORIGINS.gate, urls.gate);
  return urls.salesContact ? served.replaceAll(BUILD_SALES_CONTACT, urls.salesContact) : served;
}
