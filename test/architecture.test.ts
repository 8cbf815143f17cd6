/**
 * The layering of src/ (issue 13), checked on the source tree itself:
 *  - route modules (src/api) hold no SQL: persistence is in src/ledger, as
 *    small named functions the routes call;
 *  - no upward imports between the floors, bottom up crypto, catalog, domain,
 *    ledger and payments, api: the ledger imports nothing from api/, payments
 *    nothing from api/, the domain (pure rules) nothing from ledger/ or api/,
 *    the catalogs nothing from domain/, ledger/ or api/, crypto nothing from
 *    any of them;
 *  - the crypto core is platform-neutral (no Node module, no Buffer) but for
 *    its Node edge, and the browser's scripts do no cryptography of their own.
 * A violation fails with the file and the line that breaks the rule.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = process.cwd();
const SRC = join(REPO, 'src');

/**
 * Files under src/api still allowed to run SQL, each with why. Only ever
 * shrinks: a new route module puts its statements in src/ledger instead.
 */
const SQL_ALLOWED = new Set<string>([]);

/** Which top-level areas of src/ each area must not import. */
const FORBIDDEN_IMPORTS: Record<string, string[]> = {
  ledger: ['api'],
  payments: ['api'],
  domain: ['ledger', 'api'],
  catalog: ['domain', 'ledger', 'api'],
  crypto: ['domain', 'catalog', 'ledger', 'api', 'payments'],
};

/**
 * The files of src/crypto that may use Node (its platform, the key files, the
 * signer, JWS signing): every other one runs unchanged in a browser
 * (docs/trust-core.md, "One core").
 */
const CRYPTO_NODE_EDGE = new Set(['src/crypto/node.ts', 'src/crypto/keys.ts', 'src/crypto/ed25519.ts', 'src/crypto/jws.ts']);

/** Where a module needs Node: a `node:` (or bare builtin) import, or the Buffer global. */
function nodeUses(text: string): string[] {
  const code = withoutComments(text);
  const builtins = new Set(builtinModules);
  const imports = importsOf(text)
    .filter((i) => i.spec.startsWith('node:') || builtins.has(i.spec))
    .map((i) => `${i.line}: imports ${i.spec}`);
  const buffers = [...code.matchAll(/\bBuffer\s*[.(]/g)].map((m) => `${lineOf(code, m.index)}: uses Buffer`);
  return [...imports, ...buffers];
}

const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && SOURCE.test(e.name))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

const repoPath = (abs: string) => relative(REPO, abs).split(sep).join('/');

/** The text with comments blanked (kept line for line, so line numbers still match). */
function withoutComments(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  return text.replace(/\/\*[\s\S]*?\*\//g, blank).replace(/^(\s*)\/\/.*$/gm, (_, ws: string) => ws);
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

/** A call that runs SQL on a connection (`db.execute(`, `tx.batch(`), or a string that starts with an SQL statement. */
const SQL_PATTERNS: RegExp[] = [
  /\.\s*(execute|batch|executeMultiple)\s*\(/g,
  /[`'"]\s*(SELECT\s[\s\S]*?\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|REPLACE\s+INTO|WITH\s+\w+\s+AS\s*\()\s/g,
];

/** Where `text` runs SQL: one `line: text` per hit. */
function sqlHits(text: string): string[] {
  const code = withoutComments(text);
  const hits = new Map<number, string>();
  for (const re of SQL_PATTERNS) {
    for (const m of code.matchAll(re)) {
      const line = lineOf(code, m.index);
      hits.set(line, `${line}: ${text.split('\n')[line - 1]!.trim()}`);
    }
  }
  return [...hits.keys()].sort((a, b) => a - b).map((l) => hits.get(l)!);
}

/** Module specifiers `text` imports or re-exports (static, side-effect and dynamic), with their lines. */
function importsOf(text: string): Array<{ spec: string; line: number }> {
  const code = withoutComments(text);
  const patterns = [
    /\b(?:import|export)\s[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((re) => [...code.matchAll(re)].map((m) => ({ spec: m[1]!, line: lineOf(code, m.index) })));
}

/** The area of src/ (api, ledger, domain...) a relative specifier from `file` lands in, or undefined (a package, or outside src/). */
function areaOf(file: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const target = relative(SRC, resolve(dirname(file), spec));
  if (target.startsWith('..')) return undefined;
  return target.split(sep)[0];
}

/** The source file a relative specifier from `file` names, or undefined (a package, or not a source file of the tree). */
function targetOf(file: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const target = resolve(dirname(file), spec);
  return SOURCE.test(target) ? target : undefined;
}

/** Every import circle among `files` (each as its files in order, the first repeated at the end), found by a depth-first walk. */
function circlesOf(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const circles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    path.push(f);
    for (const to of edges.get(f) ?? []) {
      if (state.get(to) === 'open') circles.push([...path.slice(path.indexOf(to)), to]);
      else if (!state.has(to)) visit(to);
    }
    path.pop();
    state.set(f, 'done');
  };
  for (const f of [...edges.keys()].sort()) if (!state.has(f)) visit(f);
  return circles;
}

describe('architecture: the detectors see what they must', () => {
  it('finds an import circle, type-only imports included, and no circle in a chain', () => {
    const circle = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(circlesOf(circle)).toEqual([['a', 'b', 'c', 'a']]);
    expect(
      circlesOf(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['d', ['a', 'c']],
        ]),
      ),
    ).toEqual([]);
    expect(importsOf("import type { X } from './x.ts';").map((i) => i.spec)).toEqual(['./x.ts']);
  });

  it('finds SQL run in code, not in comments', () => {
    const route = [
      '// tx.execute( in a comment does not count',
      '/* nor SELECT x FROM y */',
      "const r = await ctx.ledger.read.execute({ sql: 'SELECT a FROM b WHERE c = ?', args: [1] });",
      'await tx.batch([stmt]);',
      'const q = `INSERT INTO t (a) VALUES (?)`;',
      "const s = 'UPDATE t SET a = 1';",
      "const summary = 'Select a key from the list';",
    ].join('\n');
    expect(sqlHits(route).map((h) => h.split(':')[0])).toEqual(['3', '4', '5', '6']);
  });

  it('finds static, type-only, multi-line, re-exported and dynamic imports', () => {
    const mod = [
      "import type { AppContext } from '../api/context.ts';",
      'import {',
      '  a,',
      "} from '../ledger/sql.ts';",
      "export { b } from './b.ts';",
      "const m = await import('../api/app.ts');",
      "import 'side-effect';",
      "// import { c } from '../api/c.ts';",
    ].join('\n');
    expect(
      importsOf(mod)
        .map((i) => `${i.line} ${i.spec}`)
        .sort(),
    ).toEqual(['1 ../api/context.ts', '2 ../ledger/sql.ts', '5 ./b.ts', '6 ../api/app.ts', '7 side-effect'].sort());
    expect(areaOf(join(SRC, 'ledger', 'x.ts'), '../api/context.ts')).toBe('api');
    expect(areaOf(join(SRC, 'api', 'site', 'x.ts'), '../../ledger/sql.ts')).toBe('ledger');
    expect(areaOf(join(SRC, 'ledger', 'x.ts'), './sql.ts')).toBe('ledger');
    expect(areaOf(join(SRC, 'ledger', 'x.ts'), 'zod')).toBeUndefined();
  });

  it('finds Node in a module: node: and bare builtin imports, the Buffer global, not in comments', () => {
    const mod = [
      "import { hash } from 'node:crypto';",
      "import { readFile } from 'fs/promises';",
      '// Buffer.from(x) in a comment does not count',
      "const b = Buffer.from('x');",
      "import { sha256 } from '@noble/hashes/sha2.js';",
      'const u = new Uint8Array(2); // not a Buffer',
    ].join('\n');
    expect(nodeUses(mod)).toEqual(['1: imports node:crypto', '2: imports fs/promises', '4: uses Buffer']);
  });
});

describe('architecture: the source tree', () => {
  it('no route module runs SQL: statements live in src/ledger', () => {
    const offenders = filesUnder(join(SRC, 'api'))
      .filter((f) => !SQL_ALLOWED.has(repoPath(f)))
      .flatMap((f) => sqlHits(readFileSync(f, 'utf8')).map((h) => `${repoPath(f)}:${h}`));
    expect(offenders, 'move these statements into a src/ledger module as a named function').toEqual([]);
  });

  it('every file on the SQL allow-list exists and still holds SQL (else take it off the list)', () => {
    for (const path of SQL_ALLOWED) {
      expect(sqlHits(readFileSync(join(REPO, path), 'utf8')), path).not.toEqual([]);
    }
  });

  it.each(Object.entries(FORBIDDEN_IMPORTS))('src/%s imports nothing from %j', (area, forbidden) => {
    const offenders = filesUnder(join(SRC, area)).flatMap((f) =>
      importsOf(readFileSync(f, 'utf8'))
        .filter((i) => forbidden.includes(areaOf(f, i.spec) ?? ''))
        .map((i) => `${repoPath(f)}:${i.line} imports ${i.spec}`),
    );
    expect(offenders, `src/${area} must not depend on ${forbidden.map((a) => `src/${a}`).join(' or ')}`).toEqual([]);
  });

  it('no import circle between the files of src/ (a type-only import counts: it ties the two as much)', () => {
    const files = filesUnder(SRC);
    const edges = new Map(files.map((f) => [f, importsOf(readFileSync(f, 'utf8')).flatMap((i) => targetOf(f, i.spec) ?? [])]));
    expect(
      circlesOf(edges).map((c) => c.map(repoPath).join(' -> ')),
      'break the circle: move what both need below both',
    ).toEqual([]);
  });

  it('src/crypto is platform-neutral but for its Node edge', () => {
    const offenders = filesUnder(join(SRC, 'crypto'))
      .filter((f) => !CRYPTO_NODE_EDGE.has(repoPath(f)))
      .flatMap((f) => nodeUses(readFileSync(f, 'utf8')).map((u) => `${repoPath(f)}:${u}`));
    expect(offenders, 'take the platform from src/crypto/platform.ts, bytes from bytes.ts and base64.ts').toEqual([]);
    for (const path of CRYPTO_NODE_EDGE)
      expect(nodeUses(readFileSync(join(REPO, path), 'utf8')), `${path} needs Node, or leave the edge list`).not.toEqual([]);
  });

  it("the browser's scripts take their checks from src/crypto: no WebCrypto or Node of their own", () => {
    const offenders = filesUnder(join(SRC, 'scripts')).flatMap((f) => {
      const text = readFileSync(f, 'utf8');
      const subtle = [...withoutComments(text).matchAll(/\bcrypto\.subtle\b/g)].map((m) => `${lineOf(text, m.index)}: uses crypto.subtle`);
      return [...subtle, ...nodeUses(text)].map((u) => `${repoPath(f)}:${u}`);
    });
    expect(offenders, 'verify with src/crypto (its Verifier is WebCrypto in a browser)').toEqual([]);
  });

  it("the typed client names operations, never their paths: every path comes from the declarations' table", () => {
    const text = readFileSync(join(SRC, 'client.ts'), 'utf8');
    const paths = [...text.matchAll(/['`](\/(?:v1|api|demo|\.well-known)\/[^'`]*)['`]/g)].map((m) => m[1]);
    expect(paths).toEqual([]);
  });

  it('every API operation is declared in one form: operation(), never a route registered on the router by hand', () => {
    // The router and the two modules that register what a declaration says; the dashboard's HTML pages are not operations.
    const registrars = new Set(['src/api/router.ts', 'src/api/operation.ts', 'src/api/act.ts']);
    const offenders = filesUnder(join(SRC, 'api'))
      .filter((f) => !registrars.has(repoPath(f)) && !repoPath(f).startsWith('src/api/dashboard/'))
      .flatMap((f) => {
        const text = readFileSync(f, 'utf8');
        return [...withoutComments(text).matchAll(/\b(?:router|r)\.(?:get|post|on)\(|\brouter\.app\.(?:get|post|on|all)\(/g)].map(
          (m) => `${repoPath(f)}:${lineOf(text, m.index)}`,
        );
      });
    expect(offenders, 'declare the operation with operation() (src/api/operation.ts)').toEqual([]);
  });

  it('the checks read real files (the tree is where the test looks)', () => {
    expect(filesUnder(join(SRC, 'api')).length).toBeGreaterThan(20);
    expect(filesUnder(join(SRC, 'ledger')).length).toBeGreaterThan(20);
    expect(filesUnder(join(SRC, 'domain')).length).toBeGreaterThan(5);
    expect(filesUnder(join(SRC, 'crypto')).length).toBeGreaterThan(5);
    expect(filesUnder(join(SRC, 'catalog')).length).toBeGreaterThan(5);
    expect(filesUnder(join(SRC, 'payments')).length).toBeGreaterThan(5);
    expect(filesUnder(join(SRC, 'scripts')).length).toBeGreaterThan(2);
  });
});
