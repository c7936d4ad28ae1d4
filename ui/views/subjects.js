// Subjects: the subject tree (ARIA tree, virtualized, children read a page
// at a time: the first when a node opens, the next when its "Show more"
// row is activated by Enter, Space or a click) or, with a filter, the flat list of matching
// subjects, searched by the server a page at a time (docs/api.md §4.6a).
// The tree starts at "/", or at the token's read prefixes. The tree, its
// open nodes and the scroll position stay while other views are shown;
// Refresh reads them again. The count says how many subjects show, and of
// how many where the tree is small enough to count (subject-tree.js).
import { isAbort, Latest } from '../api.js';
import * as access from '../access.js';
import { $, el, showError, errorMessage } from '../dom.js';
import { VirtualList } from '../virtual.js';
import { SubjectTree, searchSubjects, COUNT_LIMIT } from './subject-tree.js';

const DEBOUNCE_MS = 250;
const MATCH_PAGE = 200; // matches per search request
const SHORT = 200; // the search goes on by itself while fewer matches show
const NEAR_END = 50; // rows before the end at which scrolling reads more
const requests = new Latest(); // the filter's
const loads = new Map(); // node → AbortController of its page
let tree = null;
let list = null;
let filter = '';
let matches = null; // { text, subjects, next, complete } while filtering
let debounce = 0;
let savedTop = 0;
let counting = null; // AbortController of the tree's count

export function init() {
  list = new VirtualList($('subject-tree'), { createRow, renderRow, onKey });
  $('subject-tree').addEventListener('click', (event) => {
    const more = event.target.closest('[data-more]');
    if (more) {
      event.preventDefault();
      const row = tree && tree.visible[Number(more.dataset.index)];
      if (row && row.more) loadMore(row.parent);
      return;
    }
    const twisty = event.target.closest('.twisty');
    if (!twisty || matches || !tree) return;
    event.preventDefault();
    const row = twisty.closest('[data-index]');
    const n = tree.visible[Number(row.dataset.index)];
    if (n && !n.more && n.hasChildren !== false) toggle(n);
  });
  $('subject-tree').addEventListener('scroll', () => {
    if (matches && !matches.complete && !requests.running && nearEnd()) searchOn(matches);
  });
  $('subject-filter').addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(applyFilter, DEBOUNCE_MS);
  });
  $('subjects-refresh').addEventListener('click', () => {
    refresh();
  });
  $('subjects-cancel').addEventListener('click', () => {
    stopAll();
    done('Cancelled.');
  });
}

export function enter() {
  if (!tree) {
    tree = new SubjectTree(roots());
    countTree();
    for (const root of tree.roots) open(root);
  } else if (matches && !matches.complete && (matches.subjects.length < SHORT || nearEnd())) {
    searchOn(matches);
  }
  $('subject-tree').scrollTop = savedTop;
  show();
  list.render();
}

export function leave() {
  savedTop = $('subject-tree').scrollTop;
  if (running()) {
    stopAll();
    done('');
  }
}

// The subjects the tree starts at: "/", or the token's read prefixes
// (those below another left out).
function roots() {
  const prefixes = [...new Set(access.readPrefixes())].sort();
  if (!prefixes.length || prefixes.includes('/')) return ['/'];
  return prefixes.filter((p) => !prefixes.some((q) => q !== p && p.startsWith(`${q}/`)));
}

function running() {
  return loads.size > 0 || requests.running;
}

function stopAll() {
  requests.stop();
  for (const controller of loads.values()) controller.abort();
}

function rows() {
  if (matches) return matches.subjects.length;
  return tree ? tree.visible.length : 0;
}

function createRow() {
  return el('a', { class: 'vrow titem', role: 'treeitem' },
    el('span', { class: 'twisty', 'aria-hidden': 'true' }),
    el('span', { class: 'tname' }));
}

function renderRow(index, row) {
  const [twisty, name] = row.children;
  if (matches) {
    const subject = matches.subjects[index];
    row.href = eventsLink(subject);
    row.dataset.subject = subject;
    delete row.dataset.more;
    row.classList.remove('tmore');
    row.title = subject;
    row.setAttribute('aria-level', '1');
    row.setAttribute('aria-posinset', String(index + 1));
    row.setAttribute('aria-setsize', String(matches.complete ? matches.subjects.length : -1));
    row.removeAttribute('aria-expanded');
    row.removeAttribute('aria-busy');
    row.style.paddingLeft = '';
    twisty.textContent = '';
    name.textContent = subject;
    return;
  }
  const n = tree.visible[index];
  row.style.paddingLeft = `${0.5 + n.depth * 1.25}rem`;
  row.removeAttribute('aria-expanded');
  if (n.more) {
    const p = n.parent;
    row.classList.add('tmore');
    row.removeAttribute('href');
    delete row.dataset.subject;
    row.dataset.more = p.subject;
    row.title = '';
    row.setAttribute('aria-level', String(n.depth + 1));
    row.setAttribute('aria-posinset', String(p.children.length + 1));
    row.setAttribute('aria-setsize', '-1');
    if (p.loading) row.setAttribute('aria-busy', 'true');
    else row.removeAttribute('aria-busy');
    twisty.textContent = p.loading ? '…' : '';
    name.textContent = p.loading
      ? `Reading more of ${p.subject}…`
      : `Show more of ${p.subject} (${p.children.length.toLocaleString('en-US')} shown, in text order until all are read)`;
    return;
  }
  delete row.dataset.more;
  row.classList.remove('tmore');
  row.href = eventsLink(n.subject);
  row.dataset.subject = n.subject;
  row.title = n.subject;
  row.setAttribute('aria-level', String(n.depth + 1));
  row.setAttribute('aria-posinset', String(n.posinset));
  row.setAttribute('aria-setsize', String(n.parent ? SubjectTree.setSize(n.parent) : tree.roots.length));
  if (n.hasChildren !== false) row.setAttribute('aria-expanded', String(n.expanded));
  if (n.loading) row.setAttribute('aria-busy', 'true');
  else row.removeAttribute('aria-busy');
  twisty.textContent = n.loading && !n.children ? '…' : n.hasChildren === false ? '' : n.expanded ? '▾' : '▸';
  name.textContent = n.name;
}

function eventsLink(subject) {
  return `#/events?subject=${encodeURIComponent(subject)}`;
}

// Tree keys (APG): Right opens a node or moves to its first child, Left
// closes it or moves to its parent; Enter follows the link, or on a more
// row reads the next page.
function onKey(index, event) {
  if (matches) return;
  const n = tree.visible[index];
  if (n.more) {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      loadMore(n.parent);
    } else if (event.key === 'ArrowLeft') {
      event.preventDefault();
      list.focusIndex(tree.visible.indexOf(n.parent));
    }
    return;
  }
  if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
  event.preventDefault();
  if (event.key === 'ArrowRight') {
    if (n.hasChildren === false) return;
    if (!n.expanded) open(n);
    else list.focusIndex(index + 1);
  } else if (n.expanded) {
    close(n);
  } else if (n.parent) {
    list.focusIndex(tree.visible.indexOf(n.parent));
  }
}

function toggle(n) {
  if (n.expanded) close(n);
  else open(n);
}

function close(n) {
  if (loads.has(n)) loads.get(n).abort();
  tree.collapse(n);
  show();
}

async function open(n) {
  if (!n.children) {
    const ok = await loadPage(n);
    if (!ok) return;
  }
  tree.expand(n);
  show();
}

// Reads the next page of n's children if none is being read.
function loadMore(n) {
  if (loads.has(n) || n.next === null || matches) return;
  loadPage(n);
}

// Reads a page of n's children; reports whether it arrived.
async function loadPage(n) {
  const own = new AbortController();
  loads.set(n, own);
  n.loading = true;
  busy(`Reading subjects below ${n.subject}…`);
  show();
  try {
    // The focused row keeps the focus as rows come in above it; on the
    // more row, the focus goes to the first of the new children, which
    // take its place.
    // Once the last page is read the children sort in natural order: the
    // focus then follows the first new child to its place.
    const focused = $('subject-tree').contains(document.activeElement) ? tree.visible[list.active] : null;
    const fresh = await tree.loadPage(n, own.signal);
    const follow = focused && focused.more ? (focused.parent === n ? fresh : null) : focused;
    const at = follow ? tree.visible.indexOf(follow) : -1;
    if (at >= 0 && at !== list.active) {
      list.setCount(rows());
      list.focusIndex(at);
    }
    if (tree.small && n.next !== null) queueMicrotask(() => loadMore(n)); // the count came while the page was read
    return true;
  } catch (error) {
    if (!isAbort(error)) {
      showError($('subjects-error'), `Could not read subjects: ${errorMessage(error)}`);
    }
    return false;
  } finally {
    n.loading = false;
    if (loads.get(n) === own) loads.delete(n);
    if (!running()) done('');
    show();
  }
}

// Reads the tree again, reopening the nodes that were open (those among
// the first pages of their parents).
async function refresh() {
  stopAll();
  const wasOpen = tree ? tree.expandedSubjects() : [];
  const top = $('subject-tree').scrollTop;
  tree = new SubjectTree(roots());
  countTree();
  for (const root of tree.roots) if (!wasOpen.includes(root.subject)) wasOpen.unshift(root.subject);
  show();
  for (const subject of wasOpen) {
    const n = tree.find(subject);
    if (!n) continue;
    if (!(await loadPage(n))) return;
    tree.expand(n);
    show();
  }
  $('subject-tree').scrollTop = top;
  if (matches) applyFilter(true);
}

// Counts the tree's subjects; a small tree then reads the rest of the open
// nodes' children. A count that fails leaves the total unknown ("shown").
function countTree() {
  if (counting) counting.abort();
  const own = new AbortController();
  const counted = tree;
  counting = own;
  counted.count(own.signal).then(() => {
    if (tree !== counted) return;
    show();
    if (counted.small) for (const n of counted.visible) if (n.expanded && n.next !== null) loadMore(n);
  }, () => {}).finally(() => {
    if (counting === own) counting = null;
  });
}

// "602 of 1,503 shown": the subjects shown, and of how many when counted.
function shownText() {
  const shown = tree.shown().toLocaleString('en-US');
  const total = tree.total;
  if (!total) return `${shown} shown`;
  if (!total.exact && total.n > COUNT_LIMIT) return `${shown} of more than ${COUNT_LIMIT.toLocaleString('en-US')} shown`;
  if (!total.exact) return `${shown} of at least ${total.n.toLocaleString('en-US')} shown`;
  return `${shown} of ${total.n.toLocaleString('en-US')} shown`;
}

// Whether the rows in view reach near the end of the list.
function nearEnd() {
  const viewport = $('subject-tree');
  const last = (viewport.scrollTop + viewport.clientHeight) / Math.max(1, list.rowHeight);
  return last >= rows() - NEAR_END;
}

// Lists the subjects containing the filter text (any case), a page at a
// time as the server finds them.
function applyFilter(force = false) {
  const text = $('subject-filter').value.trim();
  if (text === filter && !force) return;
  filter = text;
  if (!text) {
    requests.stop();
    matches = null;
    if (!running()) done('');
    list.reset();
    show();
    return;
  }
  matches = { text, subjects: [], next: null, complete: false };
  list.reset();
  searchOn(matches);
}

// Goes on with the search of m while the list is short or its end is in
// view, showing the matches as each page comes.
async function searchOn(m) {
  const own = requests.start();
  busy('Filtering…');
  try {
    do {
      const page = await searchSubjects('/', m.text, m.next, MATCH_PAGE, own.signal);
      if (!requests.owns(own)) return;
      for (const subject of page.subjects) m.subjects.push(subject);
      m.next = page.next || null;
      m.complete = m.next === null;
      show();
    } while (!m.complete && (m.subjects.length < SHORT || nearEnd()));
  } catch (error) {
    if (!isAbort(error) && requests.owns(own)) showError($('subjects-error'), `Could not search subjects: ${errorMessage(error)}`);
  } finally {
    if (requests.owns(own)) {
      requests.finish(own);
      if (!running()) done(m.complete ? matchText(m) : '');
    }
  }
}

function matchText(m) {
  const n = m.subjects.length;
  const count = n.toLocaleString('en-US');
  if (m.complete) return n === 1 ? '1 subject matches.' : `${count} subjects match.`;
  return `${count} ${n === 1 ? 'match' : 'matches'} so far… (searched up to ${m.next})`;
}

function show() {
  const count = $('subjects-count');
  const n = rows();
  count.dataset.value = String(n);
  if (matches) {
    count.textContent = matchText(matches);
  } else if (!running() && tree) {
    const none = tree.roots.every((r) => r.hasChildren === false);
    count.textContent = none ? 'No subjects.' : shownText();
  }
  list.setCount(n);
  list.refresh();
}

function busy(text) {
  showError($('subjects-error'), '');
  $('subjects-cancel').disabled = false;
  $('subject-tree').setAttribute('aria-busy', 'true');
  progress(text);
}

function progress(text) {
  if (!matches) $('subjects-count').textContent = text;
}

function done(status) {
  $('subjects-cancel').disabled = true;
  $('subject-tree').setAttribute('aria-busy', 'false');
  $('subjects-status').textContent = status;
  show();
}
