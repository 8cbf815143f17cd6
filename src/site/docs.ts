/**
 * The docs: every docs/*.md file is one page of the site at /docs/<file name>
 * (src/pages/docs/), so the reference has one copy that reads on GitHub and on
 * the site. Links between docs are written as relative file links
 * (`trust-core.md#logs`), which GitHub follows; docsHtml rewrites them to the
 * site's pages when the Markdown is rendered.
 */

/** The page of a docs file name (`trust-core.md` -> `/docs/trust-core`). */
export const docPath = (id: string) => `/docs/${id}`;

/** The first `# Title` line of a doc, or its file name. */
export function docTitle(entry: { id: string; body?: string | undefined }): string {
  return /^# +(.+?)\s*$/m.exec(entry.body ?? '')?.[1] ?? entry.id;
}

/** Where a link written in a doc points on the site, or undefined to leave it as written. */
export function siteHref(href: string): string | undefined {
  const m = /^(?:\.\/)?([A-Za-z0-9][\w.-]*)\.md(#.*)?$/.exec(href);
  if (m) return docPath(m[1]!) + (m[2] ?? '');
  if (/^\.\.\/README\.md(#.*)?$/.test(href)) return '/docs';
  return undefined;
}

/**
 * Sätteri hast plugin: rewrites the href of every link between docs, and makes
 * tables and code blocks (which scroll sideways on a phone) reachable by keyboard.
 */
export const docsHtml = {
  name: 'docs-html',
  element: {
    filter: ['a', 'table', 'pre'],
    visit(
      node: { tagName: string; properties?: Record<string, unknown> },
      ctx: { setProperty(node: unknown, name: string, value: string): void },
    ) {
      if (node.tagName !== 'a') {
        ctx.setProperty(node, 'tabIndex', '0');
        return;
      }
      const href = node.properties?.href;
      const to = typeof href === 'string' ? siteHref(href) : undefined;
      if (to) ctx.setProperty(node, 'href', to);
    },
  },
};

/** The order of the index: the newcomer's path first, then any other doc by title. */
export const DOC_ORDER = [
  'what-runs',
  'configuration',
  'api-conventions',
  'gate-service',
  'trust-core',
  'prefinality',
  'policy-administration',
  'companion-ledger',
  'companion-metered-apis',
  'agents-and-operators',
  'command-line',
  'companion-site',
  'tests-and-benchmarks',
  'layout',
  'choices-of-ours',
];

export function sortDocs<T extends { id: string; body?: string | undefined }>(docs: T[]): T[] {
  const rank = (id: string) => (DOC_ORDER.includes(id) ? DOC_ORDER.indexOf(id) : DOC_ORDER.length);
  return [...docs].sort((a, b) => rank(a.id) - rank(b.id) || docTitle(a).localeCompare(docTitle(b)));
}

/**
 * The docs a user of the service reads (integrating agents, buying, verifying),
 * in reading order; every other doc is about running the service or its
 * internals, and the index lists it under engineering (a new doc lands there
 * until it is named here).
 */
export const USER_DOCS = [
  'gate-service',
  'api-conventions',
  'accounts',
  'alerts',
  'reviews',
  'pricing',
  'premium-acts',
  'public-log',
  'receipts',
  'decisions',
  'agents-behind-a-fuse',
  'agents-and-operators',
  'openapi',
  'prefinality',
  'x402',
  'policy-administration',
  'companion-ledger',
  'companion-metered-apis',
  'exclusion-proofs',
  'discovery',
];

/** The docs in two groups: for users of the service, then for engineers who run or change it. */
export function docGroups<T extends { id: string; body?: string | undefined }>(docs: T[]): { users: T[]; engineers: T[] } {
  const users = USER_DOCS.flatMap((id) => docs.filter((d) => d.id === id));
  return { users, engineers: sortDocs(docs.filter((d) => !USER_DOCS.includes(d.id))) };
}
