// The rows of a query as a virtual grid: a table of the rows' keys, or each
// row's JSON as received. Rows are read from the LineStore only when they
// come into view; cells show the server's text (numbers keep every digit).
import { VirtualList } from '../virtual.js';
import { members, displayText } from '../rawjson.js';
import { parseLine } from '../api.js';
import { $, el } from '../dom.js';

const ROW_PREFIX = '{"type":"row","payload":';
const SAMPLE = 100; // rows whose keys and lengths set the first columns
const MAX_WIDTH = 48; // characters
const TRAILING = '1.5rem'; // room after the last column
// Columns come in this order: an event's id, time, subject and type (those
// present), the other keys as they first appear, and data last.
const LEADING = ['id', 'time', 'subject', 'type'];
const rank = (key) => {
  const at = LEADING.indexOf(key);
  if (at >= 0) return at;
  return key === 'data' ? LEADING.length + 1 : LEADING.length;
};

export class QueryResult {
  constructor(store) {
    this.store = store;
    this.json = false;
    this.columns = null; // null until the first rows; rows that are not objects go to "value"
    this.widths = [];
    this.sampled = 0;
    this.relayout = false;
    this.grid = $('query-table');
    this.head = $('query-head');
    this.list = new VirtualList(this.grid, {
      header: this.head,
      bodyRole: 'rowgroup',
      createRow: () => el('div', { class: 'vrow', role: 'row' }),
      renderRow: (index, row) => this.#renderRow(index, row),
    });
  }

  reset() {
    this.columns = null;
    this.widths = [];
    this.sampled = 0;
    this.head.replaceChildren();
    this.list.reset();
    this.grid.setAttribute('aria-rowcount', '1');
  }

  /** Shows the rows stored so far: in the next frame, or now. */
  update(now = false) {
    if (this.sampled < Math.min(SAMPLE, this.store.count)) this.#sample();
    this.grid.setAttribute('aria-rowcount', String(this.store.count + 1));
    this.list.setCount(this.store.count);
    if (now) this.list.render();
  }

  setJSON(json) {
    this.json = json;
    this.grid.classList.toggle('json', json);
    this.#renderHead();
    this.list.refresh();
    this.list.render();
  }

  /** The raw payload text of row i, or null while it loads. */
  payload(i) {
    const line = this.store.text(i);
    if (line === null) return null;
    if (line.startsWith(ROW_PREFIX) && line.endsWith('}')) return line.slice(ROW_PREFIX.length, -1);
    const item = parseLine(line); // a row line in another spelling
    return JSON.stringify(item ? item.payload : null);
  }

  // Sets the columns and their widths from the first SAMPLE rows, as they come.
  #sample() {
    if (!this.columns) this.columns = [];
    const upto = Math.min(SAMPLE, this.store.count);
    for (let i = this.sampled; i < upto; i += 1) {
      const text = this.payload(i);
      if (text !== null) this.#learn(pairsOf(text));
    }
    this.sampled = upto;
    this.#renderHead();
    this.list.refresh();
  }

  // Adds the keys of a row as columns (in the order of rank: a new key goes
  // after the columns of its rank or a lower one) and widens columns to its
  // text (up to MAX_WIDTH characters; never narrower: the grid does not jump
  // back); reports whether the columns changed.
  #learn(pairs) {
    let changed = false;
    for (const [key, raw] of pairs) {
      let at = this.columns.indexOf(key);
      if (at < 0) {
        const r = rank(key);
        at = this.columns.findIndex((column) => rank(column) > r);
        if (at < 0) at = this.columns.length;
        this.columns.splice(at, 0, key);
        this.widths.splice(at, 0, key.length);
        changed = true;
      }
      const width = Math.min(displayText(raw).length, MAX_WIDTH);
      if (width > this.widths[at]) {
        this.widths[at] = width;
        changed = true;
      }
    }
    return changed;
  }

  #renderHead() {
    const columns = this.json ? ['JSON'] : this.columns || [];
    this.head.replaceChildren(...columns.map((c) => el('div', { class: 'vcell', role: 'columnheader', text: c })));
    const widths = this.json ? ['max-content'] : this.widths.map((w) => `${Math.max(6, w) + 3}ch`); // 3: the padding
    // The last column leaves room after it: a scrollbar drawn over the
    // content (overlay scrollbars) never covers the last heading.
    this.grid.style.setProperty('--cols', `${widths.join(' ')} minmax(${TRAILING}, 1fr)`);
  }

  #renderRow(index, row) {
    row.setAttribute('aria-rowindex', String(index + 2));
    const text = this.payload(index);
    const cells = this.json ? 1 : this.columns.length;
    while (row.children.length > cells) row.lastElementChild.remove();
    while (row.children.length < cells) row.append(el('div', { class: 'vcell', role: 'gridcell' }));
    if (text === null) {
      // Loading, or lost: a row the browser cannot read back says so.
      const failed = this.store.failure(index) !== null;
      row.classList.toggle('vfail', failed);
      row.firstElementChild.textContent = failed ? 'Cannot be shown: the browser could not read this row back' : '…';
      for (const cell of [...row.children].slice(1)) cell.textContent = '';
      return;
    }
    row.classList.remove('vfail');
    if (this.json) {
      row.firstElementChild.textContent = text;
      return;
    }
    const pairs = pairsOf(text);
    if (this.#learn(pairs) && !this.relayout) {
      this.relayout = true;
      queueMicrotask(() => {
        this.relayout = false;
        this.#renderHead();
        this.list.refresh();
      });
    }
    const values = new Map(pairs);
    this.columns.forEach((column, i) => {
      const cell = row.children[i];
      if (!cell) return;
      const shown = displayText(values.get(column));
      cell.textContent = shown;
      cell.dataset.label = column;
      cell.title = shown.length > 40 ? shown.slice(0, 2000) : '';
    });
  }
}

// A row as [column, raw value] pairs: an object's members, or one "value".
function pairsOf(text) {
  return members(text) || [['value', text]];
}
