/**
 * Navigation of the companion site: one list, used by the layout and the sitemap.
 * The top navigation is for a buyer's path; the gate pages (Diligence among them)
 * are listed on the landing page and in the sitemap, not in the top bar.
 */
import { DATA } from '../catalog/catalogs.ts';
import { GATE_PAGES } from '../catalog/discovery.ts';

export interface NavLink {
  href: string;
  label: string;
}

export const MAIN_NAV: readonly NavLink[] = [
  { href: '/', label: 'Home' },
  { href: '/start', label: 'Get started' },
  { href: '/stack', label: 'Stack' },
  { href: '/foundry', label: 'Foundry' },
  { href: '/pricing', label: 'Pricing' },
  { href: '/logs', label: 'Logs' },
  { href: '/verify', label: 'Verify' },
  { href: '/reference', label: 'API' },
  { href: '/docs', label: 'Docs' },
];

export const LAYER_NAV: readonly NavLink[] = DATA.stack.layers.map((l) => ({ href: l.path, label: `${l.order}. ${l.name}` }));
export const FOUNDRY_NAV: readonly NavLink[] = DATA.foundry.layers.map((l) => ({ href: l.path, label: `${l.layer}. ${l.name}` }));
export const GATE_NAV: readonly NavLink[] = Object.entries(GATE_PAGES).map(([slug, p]) => ({ href: `/${slug}`, label: p.title }));

/** Every HTML page of the site. */
export const ALL_PAGES: readonly string[] = [
  ...MAIN_NAV.map((l) => l.href),
  ...LAYER_NAV.map((l) => l.href),
  ...FOUNDRY_NAV.map((l) => l.href),
  ...GATE_NAV.map((l) => l.href).filter((h) => !MAIN_NAV.some((m) => m.href === h)),
];
