/**
 * Every public log served as C2SP tlog-tiles (https://c2sp.org/tlog-tiles),
 * under the prefix `<scheme>://<SITE_URL host>/<log>/`: so the log's origin
 * line (`<host>/<log>`, ledger/checkpoint.ts) is exactly its prefix without
 * the scheme, as C2SP recommends, and a stock tile client needs nothing but
 * the prefix and the verifier key:
 *
 *   <prefix>checkpoint                  the signed checkpoint and its cosignatures, cached at most 2 s
 *   <prefix>tile/<L>/<N>[.p/<W>]        hash tiles
 *   <prefix>tile/entries/<N>[.p/<W>]    entry bundles
 *
 * A tile of a given width never changes, so full and partial tiles alike are
 * immutable; a tile wider than the log is yet is 404. Tiles are computed from
 * the stored segments and height-8 hashes (ledger/log.ts). Each is served
 * under its one canonical path, as the client spelled it: a percent-escape, an
 * empty segment or a trailing slash names no tile (404), so no cache ever
 * holds one tile under two names.
 */
import { HTTPResponse, type H3Event } from 'h3';
import { parseTilePath } from '../../crypto/tiles.ts';
import { readBundle, readHashTile } from '../../ledger/log.ts';
import { cosignedCheckpoint } from '../../ledger/witnesses.ts';
import type { AppContext } from '../context.ts';
import { notFound } from '../problem.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

/** The public logs (migration 0011): a private log (an inference session's) is never served as tiles. */
export const TILED_LOGS = ['receipts', 'receipts-test', 'astl', 'triggers', 'clearing'] as const;

export const CHECKPOINT_MAX_AGE_SECONDS = 2;

/** The absolute URL prefix of a log's tiles, ending in '/'. */
export function tilesUrl(siteUrl: string, log: string): string {
  return `${new URL(siteUrl).origin}/${log}/`;
}

const PUBLIC = { 'access-control-allow-origin': '*' };

/**
 * The request's path as the client sent it, without its query: h3's
 * event.url has its escapes decoded (tile/0/%30%30%30 would read as tile/0/000).
 */
function spelledPath(event: H3Event): string {
  const target = event.runtime?.node?.req?.url ?? new URL(event.req.url).pathname;
  const query = target.indexOf('?');
  return query === -1 ? target : target.slice(0, query);
}

const notATile = (log: string, spelled: string) =>
  notFound(
    `${spelled} is not a C2SP tile path of the ${log} log (/${log}/tile/<L>/<N>[.p/<W>] or /${log}/tile/entries/<N>[.p/<W>], spelled exactly so)`,
    'unknown_tile',
  );
const IMMUTABLE = 'public, max-age=31536000, immutable';

export function registerTileRoutes(router: Router, ctx: AppContext): void {
  for (const log of TILED_LOGS) {
    operation(
      router,
      ctx,
      {
        method: 'GET',
        path: `/${log}/checkpoint`,
        summary: `The ${log} log's C2SP checkpoint (its tiles prefix is /${log}/)`,
        auth: 'public',
        tag: 'logs',
        responses: { 200: { description: 'The signed note (c2sp.org/tlog-checkpoint)', contentType: 'text/plain' } },
      },
      async ({ event }) => {
        if (spelledPath(event) !== `/${log}/checkpoint`)
          throw notFound(`the ${log} log's checkpoint is at /${log}/checkpoint, spelled exactly so`, 'route_not_found');
        // With the cosignatures witnesses gave this size, when a witness policy is set.
        const cp = await cosignedCheckpoint(ctx, log);
        return new HTTPResponse(cp.note, {
          headers: {
            'content-type': 'text/plain; charset=utf-8',
            'cache-control': `public, max-age=${CHECKPOINT_MAX_AGE_SECONDS}`,
            ...PUBLIC,
          },
        });
      },
    );
    operation(
      router,
      ctx,
      {
        method: 'GET',
        path: `/${log}/tile/**:tile`,
        summary: `A C2SP hash tile or entry bundle of the ${log} log`,
        auth: 'public',
        tag: 'logs',
        problems: [404],
        responses: { 200: { description: 'Tile bytes (c2sp.org/tlog-tiles)', contentType: 'application/octet-stream' } },
      },
      async ({ event }) => {
        const spelled = spelledPath(event);
        const prefix = `/${log}/tile/`;
        const rest = spelled.slice(prefix.length);
        const ref = spelled.startsWith(prefix) ? parseTilePath(rest) : undefined;
        if (!ref) throw notATile(log, spelled);
        const db = ctx.ledger.read;
        const bytes =
          ref.level === 'entries' ? await readBundle(db, log, ref.n, ref.width) : await readHashTile(db, log, ref.level, ref.n, ref.width);
        if (!bytes) throw notFound(`the ${log} log has no tile/${rest} yet`, 'unknown_tile');
        return new HTTPResponse(new Uint8Array(bytes), {
          headers: { 'content-type': 'application/octet-stream', 'cache-control': IMMUTABLE, ...PUBLIC },
        });
      },
    );
  }
}
