/**
 * The "Spend cap" section of the dashboard's key page and account page
 * (docs/accounts.md#spend-caps): the month's cap, spent and remaining, and a
 * form that posts the cap to the API call that sets it (an empty field: no cap).
 */
import { escapeHtml as e } from '../html.ts';
import { csrfField } from './web.ts';

/** What the API shows of a cap: `spend_cap_usd`, `spent_this_month_usd`, `remaining_usd`. */
type CapFields = Record<string, unknown>;

/**
 * The section for a cap shown as `view`, posting to `action`; `whose` says what it
 * bounds ("this key", "all the account's keys together"). With `locked` (who may
 * change it, for a person whose team role may not) the form is that sentence instead.
 */
export function spendCapSection(view: CapFields, action: string, csrf: string, whose: string, id: string, locked?: string): string {
  const cap = view.spend_cap_usd == null ? null : String(view.spend_cap_usd);
  const spent = String(view.spent_this_month_usd ?? '0.00');
  const status =
    cap === null
      ? `No cap: ${whose} may be charged without a monthly bound. Spent this month: <strong>${e(spent)} USD</strong>.`
      : `<strong>${e(spent)} USD</strong> of <strong>${e(cap)} USD</strong> spent this month (UTC); <strong>${e(String(view.remaining_usd))} USD</strong> left. Past the cap an act is refused with 402 <code>spend_cap_reached</code> and charges nothing; an alert goes out at 80 %.`;
  if (locked) return `<h2 id="${id}-h">Spend cap</h2><p>${status}</p><p class="muted">${e(locked)}</p>`;
  return `<h2 id="${id}-h">Spend cap</h2><p>${status}</p>
<form method="post" action="${e(action)}" aria-labelledby="${id}-h">${csrfField(csrf)}<div class="row">
<p><label for="${id}">Most charged per month, USD (empty: no cap)</label><input id="${id}" name="spend_cap_usd" inputmode="decimal" pattern="[0-9]{1,10}([.][0-9]{1,2})?" placeholder="250.00" value="${cap === null ? '' : e(cap)}"></p>
<p><button type="submit">Save the spend cap</button></p></div></form>`;
}

/** The API body of a posted cap field: empty is null (no cap); anything else is sent as typed, for the API to check. */
export function spendCapBody(field: string | null): { spend_cap_usd: string | null } {
  const t = (field ?? '').trim();
  return { spend_cap_usd: t === '' ? null : t };
}
