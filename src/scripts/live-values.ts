/**
 * Live values on layer pages, read when the page is viewed (the static page
 * is built once): the newest clearing checkpoint, the newest settlements.
 */
type Json = Record<string, any>;

function el(tag: string, text?: string, attrs: Record<string, string> = {}): HTMLElement {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function facts(pairs: Array<[string, string]>): HTMLElement {
  const dl = el('dl', undefined, { class: 'live-facts' });
  for (const [k, v] of pairs) dl.append(el('dt', k), el('dd', v));
  return dl;
}

async function clearing(box: HTMLElement): Promise<void> {
  const c = (await (await fetch('/api/v1/clearing/catalog', { headers: { accept: 'application/json' } })).json()) as Json;
  const n = c.network_checkpoint as Json | null;
  if (!n) {
    box.replaceChildren(el('p', 'No clearing checkpoint has been sealed yet on this service.'));
    return;
  }
  const link = el('a', 'Check the clearing log in your browser', { href: '/logs?log=clearing' });
  box.replaceChildren(
    facts([
      ['checkpoint', String(n.checkpoint_id)],
      ['period', `${n.period_start} to ${n.period_end}`],
      ['receipts covered', `${n.receipts.from} to ${n.receipts.to}`],
      ['total charged', `${n.total_usd} USD`],
      ['clearing log entry', String(n.clearing_index)],
    ]),
    el('p').appendChild(link).parentElement!,
  );
}

async function settlements(box: HTMLElement): Promise<void> {
  const c = (await (await fetch('/api/v1/foundry/catalog.json', { headers: { accept: 'application/json' } })).json()) as Json;
  const list = (c.recent_settlements ?? []) as Json[];
  if (list.length === 0) {
    box.replaceChildren(el('p', 'No trigger has fired yet on this service.'));
    return;
  }
  const table = el('table');
  table.append(el('caption', `The ${list.length} newest fires, newest first`));
  const head = el('tr');
  for (const h of ['fired at', 'template', 'reading', 'fee', 'receipt']) head.append(el('th', h, { scope: 'col' }));
  table.append(el('thead').appendChild(head).parentElement!);
  const body = el('tbody');
  for (const s of list) {
    const tr = el('tr');
    const fee = s.fee ? String(s.fee.amount_usd ?? s.fee.usd ?? s.fee.bps_fee_usd ?? JSON.stringify(s.fee)) : '—';
    tr.append(el('td', String(s.fired_at)), el('td', String(s.template_id)), el('td', String(s.reading ?? '—')), el('td', fee));
    const td = el('td');
    if (s.receipt_id) td.append(el('a', 'verify', { href: `/verify?id=${encodeURIComponent(s.receipt_id)}` }));
    tr.append(td);
    body.append(tr);
  }
  table.append(body);
  const wrap = el('div', undefined, { class: 'table-wrap', role: 'region', 'aria-label': 'Recent settlements', tabindex: '0' });
  wrap.append(table);
  box.replaceChildren(wrap);
}

for (const box of document.querySelectorAll<HTMLElement>('[data-live]')) {
  const run = box.dataset.live === 'clearing' ? clearing : settlements;
  run(box)
    .then(() => (box.dataset.state = 'loaded'))
    .catch((e: unknown) => box.replaceChildren(el('p', `Could not load the live values: ${(e as Error).message}`)));
}
