// Keyboard navigation through rows, shared by the virtual lists and the
// small tables: a list is one tab stop, arrows move within it.

/** The index a navigation key moves to from index, or null for other keys. */
export function moveKey(event, index, count, pageRows) {
  if (event.altKey || event.metaKey || count === 0) return null;
  switch (event.key) {
    case 'ArrowDown': return Math.min(index + 1, count - 1);
    case 'ArrowUp': return Math.max(index - 1, 0);
    case 'PageDown': return Math.min(index + pageRows, count - 1);
    case 'PageUp': return Math.max(index - pageRows, 0);
    case 'Home': return 0;
    case 'End': return count - 1;
    default: return null;
  }
}

/**
 * Roving tabindex over the rows (matching selector) of a small table body:
 * one row is tabbable, arrows move focus, Enter or Space calls onOpen(row).
 */
export function rowKeys(tbody, selector, onOpen) {
  tbody.addEventListener('keydown', (event) => {
    const row = event.target.closest(selector);
    if (!row || event.target !== row) return;
    const rows = [...tbody.querySelectorAll(selector)];
    const index = moveKey(event, rows.indexOf(row), rows.length, 10);
    if (index !== null) {
      event.preventDefault();
      focusRow(rows, index);
    } else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      onOpen(row);
    }
  });
  tbody.addEventListener('focusin', (event) => {
    const row = event.target.closest(selector);
    if (row) focusRow([...tbody.querySelectorAll(selector)], -1, row);
  });
}

/** Makes row index (or the given row) the table's only tab stop, focusing it when index >= 0. */
export function focusRow(rows, index, current = rows[index]) {
  for (const row of rows) row.tabIndex = row === current ? 0 : -1;
  if (index >= 0 && current) current.focus();
}
