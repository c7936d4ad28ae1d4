// VirtualList renders only the rows in view of a scrolling viewport: the
// DOM holds a screenful of rows (plus a few) however many there are. Rows
// have one height, measured from the first one rendered. It is one tab
// stop with a roving tabindex: arrows, Page Up/Down, Home and End move the
// focus; other keys go to onKey(index, event). Past MAX_PX of rows the
// scrollbar maps to row positions proportionally (browsers cap element
// heights).
import { moveKey } from './keys.js';

const OVERSCAN = 6;
const MAX_PX = 8e6;

export class VirtualList {
  /**
   * viewport: the scrolling element (its role, label and an optional
   * sticky header are the caller's). createRow() makes an empty row
   * element; renderRow(index, el) fills it; onKey(index, event) handles
   * keys other than movement.
   */
  constructor(viewport, { createRow, renderRow, onKey = () => {}, header = null, bodyRole = 'none' }) {
    this.viewport = viewport;
    this.header = header;
    this.createRow = createRow;
    this.renderRow = renderRow;
    this.onKey = onKey;
    this.body = document.createElement('div');
    this.body.className = 'vlist-body';
    this.body.setAttribute('role', bodyRole);
    viewport.append(this.body);
    this.count = 0;
    this.active = 0;
    this.rowHeight = 28;
    this.rows = new Map(); // index → element
    this.pool = [];
    this.frame = 0;
    this.layout = { scaled: false, top: 0, first: 0, view: 0 };
    viewport.addEventListener('scroll', () => this.schedule());
    viewport.addEventListener('keydown', (event) => this.#key(event));
    viewport.addEventListener('focus', (event) => {
      if (event.target === viewport && this.count > 0) this.focusIndex(this.active);
    });
    this.body.addEventListener('focusin', (event) => {
      const row = event.target.closest('[data-index]');
      if (row) this.#setActive(Number(row.dataset.index));
    });
    new ResizeObserver(() => this.schedule()).observe(viewport);
  }

  /** Sets the number of rows (a growing stream calls it as rows arrive). */
  setCount(count) {
    this.count = count;
    if (this.active >= count) this.active = Math.max(0, count - 1);
    for (const index of [...this.rows.keys()]) if (index >= count) this.#release(index);
    this.schedule();
  }

  /** Empties the list and scrolls back to the top. */
  reset() {
    for (const index of [...this.rows.keys()]) this.#release(index);
    this.count = 0;
    this.active = 0;
    this.viewport.scrollTop = 0;
    this.render();
  }

  /** Renders the visible rows again (their data changed). */
  refresh() {
    for (const [index, el] of this.rows) this.renderRow(index, el);
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
  }

  get pageRows() {
    return Math.max(1, Math.floor(this.layout.view / this.rowHeight) - 1);
  }

  /** Scrolls index into view (if needed), renders, and focuses its row. */
  focusIndex(index) {
    if (this.count === 0) return;
    this.#setActive(Math.max(0, Math.min(index, this.count - 1)));
    this.scrollToIndex(this.active);
    const el = this.rows.get(this.active);
    if (el) el.focus({ preventScroll: true });
  }

  scrollToIndex(index) {
    this.render();
    const { scaled, top, view } = this.layout;
    const h = this.rowHeight;
    const y = this.#offset(index);
    if (y >= top && y + h <= top + view) return;
    if (!scaled) {
      this.viewport.scrollTop = y < top ? y : y + h - view;
    } else {
      const rowsInView = view / h;
      const span = Math.max(1, this.count - rowsInView);
      this.viewport.scrollTop = (Math.min(index, span) / span) * (MAX_PX - view);
    }
    this.render();
  }

  /** Lays out and fills the rows in view. */
  render() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.#measure();
    const h = this.rowHeight;
    const total = this.count * h;
    const scaled = total > MAX_PX;
    const height = scaled ? MAX_PX : total;
    this.body.style.height = `${height}px`;
    const headerHeight = this.header ? this.header.offsetHeight : 0;
    const view = Math.max(0, this.viewport.clientHeight - headerHeight);
    const top = Math.min(this.viewport.scrollTop, Math.max(0, height - view));
    const first = scaled ? (top / Math.max(1, height - view)) * Math.max(0, this.count - view / h) : top / h;
    this.layout = { scaled, top, first, view, height };
    const start = Math.max(0, Math.floor(first) - OVERSCAN);
    const end = Math.min(this.count, Math.ceil(first + view / h) + OVERSCAN);
    for (const index of [...this.rows.keys()]) {
      const keep = index === this.active && this.rows.get(index).contains(document.activeElement);
      if ((index < start || index >= end) && !keep) this.#release(index);
    }
    for (let index = start; index < end; index += 1) {
      if (!this.rows.has(index)) this.#claim(index);
    }
    for (const [index, el] of this.rows) {
      const y = Math.max(0, Math.min(this.#offset(index), height - h));
      el.style.transform = `translateY(${y}px)`;
      el.tabIndex = index === this.active ? 0 : -1;
    }
    this.viewport.tabIndex = this.count > 0 && !this.rows.has(this.active) ? 0 : -1;
  }

  #offset(index) {
    const { scaled, top, first } = this.layout;
    return scaled ? top + (index - first) * this.rowHeight : index * this.rowHeight;
  }

  #measure() {
    const sample = this.rows.values().next().value;
    if (!sample) return;
    const h = sample.offsetHeight;
    if (h > 0 && Math.abs(h - this.rowHeight) > 0.5) this.rowHeight = h;
  }

  // Inserts a row for index in index order (assistive technology reads the
  // DOM order), never moving the others: a moved element would lose focus.
  #claim(index) {
    const el = this.pool.pop() || this.createRow();
    el.dataset.index = String(index);
    this.renderRow(index, el);
    let next = null;
    for (const [other, node] of this.rows) {
      if (other > index && (!next || other < Number(next.dataset.index))) next = node;
    }
    this.body.insertBefore(el, next);
    this.rows.set(index, el);
  }

  #release(index) {
    const el = this.rows.get(index);
    this.rows.delete(index);
    el.remove();
    this.pool.push(el);
  }

  #setActive(index) {
    if (index === this.active) return;
    const old = this.rows.get(this.active);
    if (old) old.tabIndex = -1;
    this.active = index;
    const el = this.rows.get(index);
    if (el) el.tabIndex = 0;
  }

  #key(event) {
    const index = moveKey(event, this.active, this.count, this.pageRows);
    if (index !== null) {
      event.preventDefault();
      this.focusIndex(index);
    } else if (this.count > 0) {
      this.onKey(this.active, event);
    }
  }
}
