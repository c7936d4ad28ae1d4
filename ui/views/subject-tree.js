// The subject tree, read a page of children at a time: opening a node reads
// its first page of direct children with read-subject-children
// (docs/api.md §4.6a), each page costing what it shows however many
// subjects lie below; a "Show more" row after a node's loaded children
// stands for the pages not read yet. visible is the flattened list of shown rows:
// nodes, and the more rows of open nodes with pages left.
//
// The server sends siblings in byte order (1439 before 144); once all of a
// node's children are read they are shown in natural order (numbers by
// value: 144, 1439, 1440). In a store of at most COUNT_LIMIT subjects
// (count() tells), opening a node reads all of its children at once.
import { postJSON } from '../api.js';

/** Children read per page. */
export const PAGE = 100;
/** The subjects count() counts at most, and the children a node reads at once where they are fewer. */
export const COUNT_LIMIT = 10000;
const BIG_PAGE = 1000; // the API's largest page
const COUNT_REQUESTS = 30; // count() gives up after as many

/**
 * Reads a page of the children of subject after the child after (null:
 * from the first): { children: [{ subject, hasEvents, hasChildren }], next }.
 */
function readChildren(subject, after, signal, limit = PAGE) {
  const body = { subject, limit };
  if (after) body.after = after;
  return postJSON('/api/v1/read-subject-children', body, { signal });
}

/**
 * Reads a page of the subjects within base whose text contains text (any
 * case; a text starting with "/" is a prefix): { subjects, next }, next
 * null once the search is complete. The server looks for about 50 ms per page.
 */
export function searchSubjects(base, text, after, limit, signal) {
  const body = { baseSubject: base, contains: text, limit };
  if (after) body.after = after;
  return postJSON('/api/v1/search-subjects', body, { signal });
}

function node(subject, depth, parent, posinset, hasChildren = null, hasEvents = null) {
  const name = depth === 0 ? subject : subject.slice(subject.lastIndexOf('/') + 1);
  return {
    subject, name, depth, parent, posinset, hasChildren, hasEvents,
    children: null, // the children read so far, null before the first page
    next: null, // the child to read the next page after, null when all are read
    expanded: false,
    loading: false,
    moreRow: null,
  };
}

/** The more row of n: the pages of n's children not read yet. */
function moreRow(n) {
  if (!n.moreRow) n.moreRow = { more: true, parent: n, depth: n.depth + 1 };
  return n.moreRow;
}

export class SubjectTree {
  /** roots: the subjects at the top, "/" or the token's read prefixes. */
  constructor(roots = ['/']) {
    this.roots = roots.map((subject, i) => node(subject, 0, null, i + 1));
    this.visible = [...this.roots];
    this.total = null; // the subjects below the roots, roots included, once count() knows: { n, exact }
  }

  /**
   * Counts the subjects of the tree (search-subjects lists every subject
   * for the text ""), up to COUNT_LIMIT: total then is { n, exact: true },
   * or { n, exact: false } when it stopped at n (past COUNT_LIMIT, or after
   * COUNT_REQUESTS requests: the server ends a page early after 50 ms).
   */
  async count(signal) {
    let n = 0;
    let requests = 0;
    for (const root of this.roots) {
      let after = null;
      do {
        if (n > COUNT_LIMIT || requests === COUNT_REQUESTS) {
          this.total = { n, exact: false };
          return;
        }
        const page = await searchSubjects(root.subject, '', after, BIG_PAGE, signal);
        requests += 1;
        n += page.subjects.length;
        after = page.next || null;
      } while (after !== null);
    }
    this.total = { n, exact: true };
  }

  /** Whether the tree is small enough to read a node's children all at once. */
  get small() {
    return this.total !== null && this.total.exact && this.total.n <= COUNT_LIMIT;
  }

  /**
   * Reads the next page of n's children (the first if none was read), or
   * in a small tree all of them (up to COUNT_LIMIT), and shows them if n is
   * open; returns the first child read (null: none). On failure nothing
   * changes.
   */
  async loadPage(n, signal) {
    const all = this.small;
    const read = [];
    let after = n.children ? n.next : null;
    do {
      const page = await readChildren(n.subject, after, signal, all ? BIG_PAGE : PAGE);
      for (const c of page.children) read.push(c);
      after = page.next || null;
    } while (all && after !== null && read.length < COUNT_LIMIT);
    const children = n.children || [];
    const first = children.length;
    for (const c of read) children.push(node(c.subject, n.depth + 1, n, children.length + 1, c.hasChildren, c.hasEvents));
    const fresh = children[first] || null;
    if (after === null) {
      children.sort((a, b) => naturalCompare(a.name, b.name));
      children.forEach((c, i) => { c.posinset = i + 1; });
    }
    n.children = children;
    n.next = after;
    n.hasChildren = children.length > 0 || n.next !== null;
    if (n.expanded) this.expand(n);
    return fresh;
  }

  /** The number of children of n, or -1 while pages are left (unknown). */
  static setSize(n) {
    if (!n) return 1;
    return n.next === null ? n.children.length : -1;
  }

  /** Shows the loaded children of n (and their open descendants). */
  expand(n) {
    if (!n.children) return;
    this.#hideDescendants(n);
    n.expanded = true;
    const at = this.visible.indexOf(n);
    if (at < 0) return;
    const rows = flatten(n.children);
    if (n.next !== null) rows.push(moreRow(n));
    this.visible = this.visible.slice(0, at + 1).concat(rows, this.visible.slice(at + 1));
  }

  collapse(n) {
    this.#hideDescendants(n);
    n.expanded = false;
  }

  #hideDescendants(n) {
    const at = this.visible.indexOf(n);
    if (at < 0) return;
    let end = at + 1;
    while (end < this.visible.length && this.visible[end].depth > n.depth) end += 1;
    this.visible.splice(at + 1, end - at - 1);
  }

  /** The number of visible subjects (more rows left out). */
  shown() {
    let n = 0;
    for (const row of this.visible) if (!row.more) n += 1;
    return n;
  }

  /** The subjects of the expanded nodes, parents first. */
  expandedSubjects() {
    return this.visible.filter((n) => n.expanded).map((n) => n.subject);
  }

  /** The visible node with subject, or null. */
  find(subject) {
    return this.visible.find((n) => !n.more && n.subject === subject) || null;
  }
}

/**
 * Compares two subject segments in natural order: runs of digits by their
 * value (144 before 1439), other text by code unit; equal values with
 * fewer leading zeros first.
 */
export function naturalCompare(a, b) {
  const x = a.match(/\d+|\D+/g) || [];
  const y = b.match(/\d+|\D+/g) || [];
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const p = x[i];
    const q = y[i];
    if (p === q) continue;
    if (isDigit(p) && isDigit(q)) {
      const pv = p.replace(/^0+/, '');
      const qv = q.replace(/^0+/, '');
      if (pv.length !== qv.length) return pv.length - qv.length;
      if (pv !== qv) return pv < qv ? -1 : 1;
      return p.length - q.length;
    }
    return p < q ? -1 : 1;
  }
  return x.length - y.length;
}

function isDigit(run) {
  return run.charCodeAt(0) >= 48 && run.charCodeAt(0) <= 57;
}

// The rows in display order: each node followed by its expanded
// descendants and, while pages are left, its more row. (No argument
// spreading: a level may hold many thousands.)
function flatten(nodes) {
  const out = [];
  const stack = [];
  for (let i = nodes.length - 1; i >= 0; i -= 1) stack.push(nodes[i]);
  while (stack.length) {
    const n = stack.pop();
    out.push(n);
    if (n.more || !n.expanded || !n.children) continue;
    if (n.next !== null) stack.push(moreRow(n));
    for (let i = n.children.length - 1; i >= 0; i -= 1) stack.push(n.children[i]);
  }
  return out;
}
