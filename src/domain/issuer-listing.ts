/**
 * Issuer-pays listings (SPEC 2.4, stack step 11): who may take a vendor id on
 * the index. Pure: no I/O.
 *
 * The vendors the catalog ranks (its `rankings`, e.g. velaru) are the
 * catalog's: it graded them, and no account can prove here that it speaks for
 * one. So a listing may not take a ranked vendor's id, nor carry it as a word
 * of its own id or name ("velaru-official", "Velaru (official)"): the public
 * index would otherwise show an impostor beside the grade.
 */

/** The words of an id or a name: lowercase letters and digits, split on everything else. */
const words = (text: string): string[] =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);

/** Whether `haystack` holds the words of `needle` in a row. */
function holds(haystack: readonly string[], needle: readonly string[]): boolean {
  return haystack.some((_, i) => needle.every((w, j) => haystack[i + j] === w));
}

/** The ranked vendor a listing of `vendor` named `name` would claim, and the field that claims it; undefined when none. */
export function claimedRankedVendor(
  listing: { vendor: string; name: string },
  ranked: readonly string[],
): { vendor: string; field: 'vendor' | 'name' } | undefined {
  for (const id of ranked) {
    for (const field of ['vendor', 'name'] as const) if (holds(words(listing[field]), words(id))) return { vendor: id, field };
  }
  return undefined;
}
