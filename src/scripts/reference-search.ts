/**
 * The API reference's search box: as a person types, only the operations whose
 * method, path, summary or name hold every word stay listed (each links to its
 * area's page), and the count of matches is announced. Without script the box
 * stays hidden and the page lists every operation.
 */
export function searchOperations(input: HTMLInputElement, status: HTMLElement): void {
  const items = [...document.querySelectorAll<HTMLElement>('[data-search]')];
  const sections = [...document.querySelectorAll<HTMLElement>('section[data-tag]')];
  const run = () => {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const item of items) {
      const hit = words.every((w) => item.dataset.search!.includes(w));
      item.hidden = !hit;
      if (hit) shown++;
    }
    for (const s of sections) s.hidden = !s.querySelector('[data-search]:not([hidden])');
    status.textContent = words.length ? `${shown} of ${items.length} operations match` : '';
  };
  input.addEventListener('input', run);
  input.closest('form')?.addEventListener('submit', (e) => e.preventDefault());
  input.closest<HTMLElement>('[hidden]')?.removeAttribute('hidden');
  run();
}
