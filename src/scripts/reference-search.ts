/**
 * The API reference's search box: as a person types, only the operations whose
 * method, path, summary or MCP tool name hold every word stay shown, and the
 * count of matches is announced. Without script the box stays hidden and the
 * page lists every operation.
 */
export function searchOperations(input: HTMLInputElement, status: HTMLElement): void {
  const articles = [...document.querySelectorAll<HTMLElement>('article[data-search]')];
  const sections = [...document.querySelectorAll<HTMLElement>('section[data-tag]')];
  const run = () => {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const a of articles) {
      const hit = words.every((w) => a.dataset.search!.includes(w));
      a.hidden = !hit;
      if (hit) shown++;
    }
    for (const s of sections) s.hidden = !s.querySelector('article:not([hidden])');
    status.textContent = words.length ? `${shown} of ${articles.length} operations match` : '';
  };
  input.addEventListener('input', run);
  input.closest('form')?.addEventListener('submit', (e) => e.preventDefault());
  input.closest<HTMLElement>('[hidden]')?.removeAttribute('hidden');
  run();
}
