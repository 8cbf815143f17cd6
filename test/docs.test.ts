/**
 * The docs (docs/*.md) read the same on GitHub and on the site: every file has
 * its page under /docs and is listed on the index, and every link between the
 * docs resolves both as a file with its heading (GitHub) and as a built page
 * with its id (the site). Needs the build (dist/client), as npm test runs it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import GithubSlugger from 'github-slugger';
import { describe, expect, it } from 'vitest';

const REPO = process.cwd();
const DOCS = join(REPO, 'docs');
const BUILT = join(REPO, 'dist/client');
const files = readdirSync(DOCS)
  .filter((f) => f.endsWith('.md'))
  .sort();

/** Markdown outside fenced code blocks. */
const unfenced = (md: string) => md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
/** ... and outside code spans. */
const prose = (md: string) => unfenced(md).replace(/`[^`\n]*`/g, '');

/** Heading anchors as GitHub makes them (github-slugger over the heading's text). */
function anchors(md: string): Set<string> {
  const slugger = new GithubSlugger();
  const text = (h: string) =>
    h
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/`/g, '')
      .replace(/(\*\*|__)(.*?)\1/g, '$2');
  return new Set([...unfenced(md).matchAll(/^#{1,6} +(.+?)\s*#*$/gm)].map((m) => slugger.slug(text(m[1]!))));
}

const links = (md: string) => [...prose(md).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
const builtPage = (path: string) => join(BUILT, path, 'index.html');
const ids = (html: string) => new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]));

/** Checks one relative link of a Markdown file in `fromDir` as GitHub would follow it. */
function brokenOnGitHub(fromDir: string, href: string): string | undefined {
  const [path, frag] = href.split('#') as [string, string | undefined];
  const target = path ? normalize(join(fromDir, path)) : undefined;
  if (target && !existsSync(target)) return 'no such file';
  if (frag && (target ?? '').endsWith('.md') && !anchors(readFileSync(target!, 'utf8')).has(frag)) return `no heading #${frag}`;
  return undefined;
}

describe('docs', () => {
  it('each start with a "# Title" line', () => {
    expect(files.length).toBeGreaterThanOrEqual(15);
    expect(files.filter((f) => !/^# \S/.test(readFileSync(join(DOCS, f), 'utf8')))).toEqual([]);
  });

  it('each have their page at /docs/<name> with their title, and the index lists every one', () => {
    const index = readFileSync(builtPage('/docs'), 'utf8');
    for (const f of files) {
      const name = f.replace(/\.md$/, '');
      const title = /^# +(.+)$/m.exec(readFileSync(join(DOCS, f), 'utf8'))![1]!.trim();
      expect(existsSync(builtPage(`/docs/${name}`)), `page of docs/${f}`).toBe(true);
      const html = readFileSync(builtPage(`/docs/${name}`), 'utf8');
      expect(html.match(/<h1[^>]*>([\s\S]*?)<\/h1>/)![1]!.replace(/<[^>]+>/g, '')).toBe(title.replace(/`/g, ''));
      expect(index).toContain(`href="/docs/${name}"`);
    }
  });

  it('link only to other docs, the README, their own headings or absolute URLs, and every such link resolves on GitHub', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const f of files) {
      for (const href of links(readFileSync(join(DOCS, f), 'utf8'))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // http(s), mailto
        checked++;
        if (!/^(#|(\.\/)?[\w.-]+\.md(#|$)|\.\.\/README\.md(#|$))/.test(href)) {
          broken.push(`docs/${f} -> ${href} (a doc links to docs/*.md, ../README.md or #heading; write repository paths as code)`);
          continue;
        }
        const why = brokenOnGitHub(DOCS, href.startsWith('#') ? `${f}${href}` : href);
        if (why) broken.push(`docs/${f} -> ${href}: ${why}`);
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(broken).toEqual([]);
  });

  it('every link between docs resolves on the site to a built page and its id', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const f of files) {
      const name = f.replace(/\.md$/, '');
      const html = readFileSync(builtPage(`/docs/${name}`), 'utf8');
      const article = html.slice(html.indexOf('<article'), html.indexOf('</article>'));
      for (const m of article.matchAll(/\shref="([^"]+)"/g)) {
        const url = new URL(m[1]!.replaceAll('&amp;', '&'), `http://site.test/docs/${name}`);
        if (url.origin !== 'http://site.test') continue;
        checked++;
        if (url.pathname.endsWith('.md')) {
          broken.push(`/docs/${name} -> ${m[1]} (a file link was not rewritten)`);
          continue;
        }
        const page = builtPage(url.pathname);
        if (!existsSync(page)) broken.push(`/docs/${name} -> ${m[1]}`);
        else if (url.hash && !ids(readFileSync(page, 'utf8')).has(decodeURIComponent(url.hash.slice(1))))
          broken.push(`/docs/${name} -> ${m[1]} (no id)`);
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(broken).toEqual([]);
  });

  it('the README links resolve on GitHub, and it stays a ten-minute start', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const relative = links(readme).filter((h) => !/^[a-z][a-z0-9+.-]*:/i.test(h));
    expect(relative.length).toBeGreaterThanOrEqual(15);
    expect(relative.map((h) => [h, brokenOnGitHub(REPO, h.startsWith('#') ? `README.md${h}` : h)]).filter(([, why]) => why)).toEqual([]);
    expect(readme.split('\n').length).toBeLessThan(100);
  });
});
