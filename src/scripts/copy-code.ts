/**
 * A "Copy" button under each code block marked `data-copy` (Get started's
 * steps). Added by script, so a page without JavaScript shows no dead button;
 * where the clipboard is refused, the block's text is selected instead.
 */
export function addCopyButtons(root: ParentNode = document): void {
  for (const pre of root.querySelectorAll<HTMLElement>('pre[data-copy]')) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy';
    button.textContent = 'Copy';
    button.setAttribute('aria-label', `Copy the ${pre.dataset.copy} command`);
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(pre.textContent ?? '');
        button.textContent = 'Copied';
      } catch {
        getSelection()?.selectAllChildren(pre);
        button.textContent = 'Selected: press Ctrl+C';
      }
    });
    pre.after(button);
  }
}
