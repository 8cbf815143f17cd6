/**
 * The /logs page: one log's signed checkpoint, growth chart, a search (by
 * receipt id or its start, index, leaf hash, fuse id, key id, decision or
 * time), newest entries,
 * inclusion proofs and a consistency check between two checkpoints. Every
 * signature and proof is checked here, in the browser, by the crypto core the
 * server runs (src/crypto/merkle.ts, note.ts).
 */
import { base64, fromBase64 } from '../crypto/base64.ts';
import { leafHash, verifyConsistency, verifyInclusion } from '../crypto/merkle.ts';
import type { Checkpoint } from '../crypto/note.ts';
import { ProofError } from '../crypto/proof-error.ts';
import { openCheckpoint, publishedKeys, type PublishedKey } from './published-keys.ts';

const PAGE = 20;
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

interface Head {
  name: string;
  origin: string;
  tree_size: number;
}
interface Entry {
  index: number;
  leaf: string;
  created_at: string;
  payload?: Record<string, unknown>;
  [k: string]: unknown;
}

async function json<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return (await res.json()) as T;
}

async function text(path: string): Promise<string> {
  const res = await fetch(path);
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return res.text();
}

function show(el: HTMLElement, ok: boolean, message: string): void {
  el.hidden = false;
  el.textContent = message;
  el.className = `verdict ${ok ? 'ok' : 'bad'}`;
  el.dataset.state = ok ? 'ok' : 'failed';
}

const reason = (e: unknown) => (e instanceof ProofError ? e.message : `could not check: ${(e as Error).message}`);

/** One-line description of an entry from its decoded fields. */
function describe(e: Entry): string {
  const p = (e.payload ?? e) as Record<string, unknown>;
  const bits = [p.kind, p.decision, p.subject ?? p.slot_id ?? p.fire_id ?? p.manifest_id].filter((x) => x !== undefined && x !== null);
  return bits.length ? bits.map(String).join(' · ') : `${fromBase64(e.leaf).length}-byte leaf`;
}

/** An inline SVG line chart of (time, size); role img with a text alternative. */
function chart(points: Array<{ size: number; at: string }>, log: string): SVGSVGElement | HTMLParagraphElement {
  if (points.length === 0) {
    const p = document.createElement('p');
    p.textContent = `The ${log} log is empty.`;
    return p;
  }
  const W = 640;
  const H = 200;
  const L = 48;
  const B = 28;
  const times = points.map((p) => Date.parse(p.at));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1);
  const max = Math.max(...points.map((p) => p.size), 1);
  const x = (t: number) => L + ((t - t0) / (t1 - t0)) * (W - L - 8);
  const y = (s: number) => H - B - (s / max) * (H - B - 10);
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('class', 'chart');
  svg.setAttribute('role', 'img');
  const first = points[0]!;
  const last = points[points.length - 1]!;
  svg.setAttribute('aria-label', `The ${log} log grew from ${first.size} entry at ${first.at} to ${last.size} entries at ${last.at}.`);
  const add = (tag: string, attrs: Record<string, string | number>, content?: string) => {
    const el = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (content !== undefined) el.textContent = content;
    svg.append(el);
  };
  add('line', { x1: L, y1: H - B, x2: W - 8, y2: H - B, stroke: '#6b7280' });
  add('line', { x1: L, y1: 10, x2: L, y2: H - B, stroke: '#6b7280' });
  add('text', { x: L - 6, y: 16, 'text-anchor': 'end', 'font-size': 12, fill: '#374151' }, String(max));
  add('text', { x: L - 6, y: H - B, 'text-anchor': 'end', 'font-size': 12, fill: '#374151' }, '0');
  add('text', { x: L, y: H - 8, 'font-size': 12, fill: '#374151' }, first.at.slice(0, 16).replace('T', ' '));
  add(
    'text',
    { x: W - 8, y: H - 8, 'text-anchor': 'end', 'font-size': 12, fill: '#374151' },
    last.at.slice(0, 16).replace('T', ' ') + ' UTC',
  );
  const d = points.map((p, i) => `${i ? 'L' : 'M'}${x(Date.parse(p.at)).toFixed(1)},${y(p.size).toFixed(1)}`).join(' ');
  add('path', { d: `${d} L${x(times[times.length - 1]!).toFixed(1)},${H - B} L${L},${H - B} Z`, fill: '#dbeafe' });
  add('path', { d, fill: 'none', stroke: '#1d4ed8', 'stroke-width': 2 });
  return svg;
}

/** A table row of an entry: index, time, what it is, and its inclusion proof (and verify link for a receipt). */
function entryRow(e: Entry, log: string, api: string, current: Checkpoint | undefined, extra?: string): HTMLTableRowElement {
  const tr = document.createElement('tr');
  const cells = [String(e.index), e.created_at.replace('T', ' ').slice(0, 19), describe(e), ...(extra !== undefined ? [extra] : [])];
  cells.forEach((c, i) => {
    const td = document.createElement('td');
    td.textContent = c;
    if (i === 0) td.className = 'num';
    if (i === 3) td.className = 'mono hash';
    tr.append(td);
  });
  const td = document.createElement('td');
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'secondary';
  b.textContent = `Prove #${e.index}`;
  b.addEventListener('click', () => {
    ($('inclusion-index') as HTMLInputElement).value = String(e.index);
    void proveInclusion(api, e.index, current);
  });
  td.append(b);
  const rid = (e.payload as Record<string, unknown> | undefined)?.receipt_id;
  if (log === 'receipts' && typeof rid === 'string') {
    const a = document.createElement('a');
    a.href = `/verify?id=${encodeURIComponent(rid)}`;
    a.className = 'verify';
    a.textContent = 'verify';
    td.append(a);
  }
  tr.append(td);
  return tr;
}

interface SearchAnswer {
  by: string;
  entries: Array<Entry & { leaf_hash: string }>;
  searched: { from: number; to: number };
  complete: boolean;
}

const READING: Record<string, string> = {
  index: 'entry index',
  receipt_id: 'receipt id',
  leaf_hash: 'leaf hash',
  fuse_id: 'fuse id',
  key_id: 'key id',
  decision: 'decision',
  time: 'time',
};

/** The latest search asked: an answer to an older one is dropped, never shown over it. */
let searchAsked = 0;

/** Runs a search of this log and shows its matches (or says why there are none). */
async function search(log: string, api: string, current: Checkpoint | undefined, q: string): Promise<void> {
  const asked = ++searchAsked;
  const status = $('search-status');
  const wrap = $('search-wrap');
  const rows = $('search-results');
  rows.replaceChildren();
  wrap.hidden = true;
  status.textContent = `Searching the ${log} log…`;
  status.dataset.state = 'searching';
  const res = await fetch(`${api}/search?q=${encodeURIComponent(q)}`, { headers: { accept: 'application/json' } });
  const body = (await res.json()) as SearchAnswer & { detail?: string };
  if (asked !== searchAsked) return;
  if (!res.ok) {
    status.textContent = `✗ ${body.detail ?? `the search answered ${res.status}`}`;
    status.dataset.state = 'failed';
    return;
  }
  const range = body.complete
    ? `all ${body.searched.to.toLocaleString('en-US')} entries`
    : `entries ${body.searched.from} to ${body.searched.to - 1} (the newest)`;
  if (body.entries.length === 0) {
    const beyond = body.by === 'index' && Number(q) >= body.searched.to;
    status.textContent = beyond
      ? `No entry ${q}: the ${log} log holds entries 0 to ${body.searched.to - 1}.`
      : `No entry of the ${log} log matches this ${READING[body.by]} (searched ${range}).`;
    status.dataset.state = 'none';
    return;
  }
  for (const e of body.entries) rows.append(entryRow(e, log, api, current, e.leaf_hash));
  $('search-caption').textContent =
    `${body.entries.length} ${body.entries.length === 1 ? 'entry' : 'entries'} matching ${READING[body.by]} ${q}`;
  status.textContent = `Found by ${READING[body.by]} in ${range}.`;
  status.dataset.state = 'found';
  wrap.hidden = false;
}

export async function startExplorer(): Promise<void> {
  const names = (await json<{ logs: Head[] }>('/api/v1/logs')).logs.map((l) => l.name);
  const wanted = new URLSearchParams(location.search).get('log') ?? 'receipts';
  const log = names.includes(wanted) ? wanted : 'receipts';
  for (const a of document.querySelectorAll<HTMLAnchorElement>('#log-tabs a')) {
    if (a.dataset.log === log) a.setAttribute('aria-current', 'page');
  }
  for (const el of document.querySelectorAll<HTMLElement>('.log-name')) el.textContent = log;
  $('cp-link').setAttribute('href', `/api/v1/logs/${log}/checkpoint`);
  $('head-link').setAttribute('href', `/api/v1/logs/${log}`);
  const api = `/api/v1/logs/${log}`;

  const [head, keys, note] = await Promise.all([json<Head>(api), publishedKeys(location.origin), text(`${api}/checkpoint`)]);
  $('origin').textContent = head.origin;
  $('checkpoint').textContent = note;
  let current: Checkpoint | undefined;
  try {
    current = await openCheckpoint(note, head.origin, keys);
    $('tree-size').textContent = current.size.toLocaleString('en-US');
    $('cp-status').textContent = `✓ verified in this browser (Ed25519, key ${keys[0]!.kid})`;
    $('cp-status').className = 'ok';
  } catch (e) {
    $('tree-size').textContent = String(head.tree_size);
    $('cp-status').textContent = `✗ ${reason(e)}`;
    $('cp-status').className = 'bad';
  }

  // Consistency: the last checkpoint this browser saw (if older), or the one at half the size.
  const memoryKey = `fusegate-checkpoint:${head.origin}`;
  const remembered = localStorage.getItem(memoryKey);
  ($('cp-new') as HTMLTextAreaElement).value = note;
  let older = remembered && current && remembered !== note ? remembered : undefined;
  if (!older && current && current.size > 1) older = await text(`${api}/checkpoint?size=${Math.max(1, Math.floor(current.size / 2))}`);
  ($('cp-old') as HTMLTextAreaElement).value = older ?? '';
  if (current) localStorage.setItem(memoryKey, note);
  $('consistency-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void checkConsistency(api, head.origin, keys);
  });

  // Growth.
  const growth = await json<{ points: Array<{ size: number; at: string }> }>(`${api}/growth`);
  const fig = $('growth');
  fig.replaceChildren(chart(growth.points, log));
  const cap = document.createElement('figcaption');
  cap.className = 'note';
  cap.textContent = `Tree size by append time (${growth.points.length} sampled entries).`;
  fig.append(cap);

  // Entries, newest first.
  const size = current?.size ?? head.tree_size;
  let end = size;
  const render = async () => {
    const start = Math.max(0, end - PAGE);
    const rows = $('entries');
    rows.replaceChildren();
    if (end > 0) {
      const page = await json<{ entries: Entry[] }>(`${api}/entries?start=${start}&limit=${end - start}`);
      for (const e of page.entries.reverse()) rows.append(entryRow(e, log, api, current));
    }
    $('entries-caption').textContent = end > 0 ? `Entries ${start} to ${end - 1} of ${size}, newest first` : 'No entries yet';
    $('page-info').textContent = end > 0 ? `${start}–${end - 1}` : '';
    ($('newer') as HTMLButtonElement).disabled = end >= size;
    ($('older') as HTMLButtonElement).disabled = start === 0;
  };
  $('newer').addEventListener('click', () => {
    end = Math.min(size, end + PAGE);
    void render();
  });
  $('older').addEventListener('click', () => {
    end = Math.max(Math.min(PAGE, size), end - PAGE);
    void render();
  });
  await render();
  // No max on the input: the browser would refuse the submit silently and leave the last verdict showing.
  $('inclusion-index').addEventListener('input', () => {
    $('inclusion-result').hidden = true;
  });
  ($('search-log') as HTMLInputElement).value = log;
  const input = $('search-q') as HTMLInputElement;
  $('search-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = input.value.trim();
    const url = new URL(location.href);
    url.searchParams.set('log', log);
    url.searchParams.set('q', q);
    history.replaceState(null, '', url);
    void search(log, api, current, q);
  });
  const asked = new URLSearchParams(location.search).get('q');
  if (asked) {
    input.value = asked;
    await search(log, api, current, asked.trim());
  }
  $('inclusion-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void proveInclusion(api, Number(($('inclusion-index') as HTMLInputElement).value), current);
  });
  document.body.dataset.explorer = 'ready';
}

/** The latest proof asked: an answer to an older one is dropped. */
let proofAsked = 0;

async function proveInclusion(api: string, index: number, cp: Checkpoint | undefined): Promise<void> {
  const asked = ++proofAsked;
  const out = $('inclusion-result');
  out.hidden = true;
  const shown = (ok: boolean, message: string) => {
    if (asked === proofAsked) show(out, ok, message);
  };
  try {
    if (!cp) throw new ProofError('there is no verified checkpoint to prove against');
    if (!Number.isSafeInteger(index) || index < 0 || index >= cp.size)
      throw new ProofError(`index ${index} is not in the tree of size ${cp.size}`);
    const [page, proof] = await Promise.all([
      json<{ entries: Entry[] }>(`${api}/entries?start=${index}&limit=1`),
      json<{ hashes: string[] }>(`${api}/proof/inclusion?index=${index}&tree_size=${cp.size}`),
    ]);
    const entry = page.entries[0];
    if (!entry || entry.index !== index) throw new ProofError(`the server returned no entry ${index}`);
    const lh = leafHash(fromBase64(entry.leaf));
    verifyInclusion(index, cp.size, lh, proof.hashes.map(fromBase64), cp.root);
    shown(
      true,
      `✓ Entry ${index} (leaf hash ${base64(lh)}) is in the signed tree of size ${cp.size}: the ${proof.hashes.length}-hash proof leads to its root.`,
    );
  } catch (e) {
    shown(false, `✗ Inclusion of entry ${index} not proven: ${reason(e)}.`);
  }
}

async function checkConsistency(api: string, origin: string, keys: PublishedKey[]): Promise<void> {
  const out = $('consistency-result');
  try {
    const a = await openCheckpoint(($('cp-old') as HTMLTextAreaElement).value.trim() + '\n', origin, keys).catch((e: unknown) => {
      throw new ProofError(`older checkpoint: ${reason(e)}`);
    });
    const b = await openCheckpoint(($('cp-new') as HTMLTextAreaElement).value.trim() + '\n', origin, keys).catch((e: unknown) => {
      throw new ProofError(`newer checkpoint: ${reason(e)}`);
    });
    const [older, newer] = a.size <= b.size ? [a, b] : [b, a];
    if (older.size === 0) throw new ProofError('the older checkpoint is of the empty tree: every tree extends it');
    const proof =
      older.size === newer.size
        ? { hashes: [] as string[] }
        : await json<{ hashes: string[] }>(`${api}/proof/consistency?from=${older.size}&to=${newer.size}`);
    verifyConsistency(older.size, newer.size, proof.hashes.map(fromBase64), older.root, newer.root);
    show(
      out,
      true,
      `✓ Consistent: both checkpoints are signed by the published key, and the tree of ${newer.size} entries contains the tree of ${older.size} unchanged (${proof.hashes.length}-hash proof checked in this browser).`,
    );
  } catch (e) {
    show(out, false, `✗ Not consistent: ${reason(e)}.`);
  }
}
