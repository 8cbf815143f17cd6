/**
 * Times and durations as a person reads them on the dashboard: "28 Nov 2026,
 * 10:01 UTC (3 min ago)", the exact RFC 3339 time kept in <time datetime> and
 * its title, so nothing is lost to the rounding.
 */
import { escapeHtml as e } from '../html.ts';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A span of time in its largest whole unit: "45 s", "3 min", "5 h", "29 days". */
export function duration(ms: number): string {
  const s = Math.floor(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h`;
  const days = Math.floor(s / 86_400);
  return `${days} day${days === 1 ? '' : 's'}`;
}

/** "28 Nov 2026, 10:01 UTC". */
export function humanDate(iso: string): string {
  const d = new Date(iso);
  const hm = d.toISOString().slice(11, 16);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}, ${hm} UTC`;
}

/** A <time> element for an RFC 3339 time, with how long ago or how soon; `none` when there is no time. */
export function timeTag(iso: string | null | undefined, none = 'never', now = Date.now()): string {
  if (!iso || Number.isNaN(Date.parse(iso))) return e(none);
  const delta = Date.parse(iso) - now;
  const relative = Math.abs(delta) < 1000 ? 'just now' : delta > 0 ? `in ${duration(delta)}` : `${duration(delta)} ago`;
  return `<time datetime="${e(iso)}" title="${e(iso)}">${e(humanDate(iso))} (${relative})</time>`;
}
