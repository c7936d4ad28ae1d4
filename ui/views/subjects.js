// Subjects: the subject tree (ARIA tree, virtualized, levels loaded when
// expanded, several at once) or, with a filter, the flat list of matching
// subjects. The tree, its expanded nodes and the scroll position stay while
// other views are shown; Refresh reads them again.
import { isAbort, Latest } from '../api.js';
import { $, el, showError, errorMessage } from '../dom.js';
import { VirtualList } from '../virtual.js';
import { SubjectTree, readSubjects, subjectText } from './subject-tree.js';

const DEBOUNCE_MS = 250;
const requests = new Latest(); // the filter's
const loads = new Map(); // node → AbortController of its level
let tree = new SubjectTree();
let list = null;
let filter = '';
let matches = null; // { text, subjects, read, complete } while filtering
let debounce = 0;
let savedTop = 0;

export function init() {
  list = new VirtualList($('subject-tree'), { createRow, renderRow, onKey });
  $('subject-tree').addEventListener('click', (event) => {
    const twisty = event.target.closest('.twisty');
    if (!twisty) return;
    event.preventDefault();
    const row = twisty.closest('[data-index]');
    const n = tree.visible[Number(row.dataset.index)];
    if (n && !matches && n.hasChildren !== false) toggle(n);
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
  if (tree.root.children === null && !loads.size) {
    open(tree.root);
  } else if (matches && !matches.complete) {
    applyFilter(true);
  }
  $('subject-tree').scrollTop = savedTop;
  list.render();
}

export function leave() {
  savedTop = $('subject-tree').scrollTop;
  if (running()) {
    stopAll();
    done('');
  }
}

function running() {
  return loads.size > 0 || requests.running;
}

function stopAll() {
  requests.stop();
  for (const controller of loads.values()) controller.abort();
}

function rows() {
  return matches ? matches.subjects.length : tree.visible.length;
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
    row.setAttribute('aria-level', '1');
    row.setAttribute('aria-posinset', String(index + 1));
    row.setAttribute('aria-setsize', String(matches.subjects.length));
    row.removeAttribute('aria-expanded');
    row.removeAttribute('aria-busy');
    row.style.paddingLeft = '';
    twisty.textContent = '';
    name.textContent = subject;
    return;
  }
  const n = tree.visible[index];
  row.href = eventsLink(n.subject);
  row.dataset.subject = n.subject;
  row.title = n.subject;
  row.setAttribute('aria-level', String(n.depth + 1));
  row.setAttribute('aria-posinset', String(n.posinset));
  row.setAttribute('aria-setsize', String(n.parent ? n.parent.children.length : 1));
  if (n.hasChildren !== false) row.setAttribute('aria-expanded', String(n.expanded));
  else row.removeAttribute('aria-expanded');
  if (n.loading) row.setAttribute('aria-busy', 'true');
  else row.removeAttribute('aria-busy');
  row.style.paddingLeft = `${0.5 + n.depth * 1.25}rem`;
  twisty.textContent = n.loading ? '…' : n.hasChildren === false ? '' : n.expanded ? '▾' : '▸';
  name.textContent = n.name;
}

function eventsLink(subject) {
  return `#/events?subject=${encodeURIComponent(subject)}`;
}

// Tree keys (APG): Right opens a node or moves to its first child, Left
// closes it or moves to its parent; Enter follows the link.
function onKey(index, event) {
  if (matches || (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft')) return;
  event.preventDefault();
  const n = tree.visible[index];
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
    const ok = await loadLevel(n);
    if (!ok) return;
  }
  tree.expand(n);
  show();
}

// Reads the children of n, showing them as they come; reports whether all arrived.
async function loadLevel(n) {
  const own = new AbortController();
  loads.set(n, own);
  n.loading = true;
  busy(`Reading subjects below ${n.subject}…`);
  show();
  try {
    await tree.load(n, own.signal, (read) => {
      show();
      progress(`Reading subjects below ${n.subject}… ${read.toLocaleString('en-US')}`);
    });
    return true;
  } catch (error) {
    if (!isAbort(error)) showError($('subjects-error'), `Could not read subjects: ${errorMessage(error)}`);
    return false;
  } finally {
    n.loading = false;
    loads.delete(n);
    if (!running()) done('');
    show();
  }
}

// Reads the tree again, reopening the nodes that were open.
async function refresh() {
  stopAll();
  const wasOpen = tree.expandedSubjects();
  if (!wasOpen.length) wasOpen.push('/');
  const top = $('subject-tree').scrollTop;
  tree = new SubjectTree();
  show();
  for (const subject of wasOpen) {
    const n = tree.find(subject);
    if (!n) continue;
    if (!(await loadLevel(n))) return;
    tree.expand(n);
    show();
  }
  $('subject-tree').scrollTop = top;
  if (matches) applyFilter(true);
}

// Lists every subject containing the filter text (any case), as they stream.
async function applyFilter(force = false) {
  const text = $('subject-filter').value.trim().toLowerCase();
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
  const own = requests.start();
  matches = { text, subjects: [], read: 0, complete: false };
  const current = matches;
  list.reset();
  busy('Filtering…');
  try {
    await readSubjects('/', own.signal, (depth, line, start, end) => {
      const subject = subjectText(line, start, end);
      current.read += 1;
      if (subject.toLowerCase().includes(text)) current.subjects.push(subject);
      if (current.read % 1024 === 0) show();
    });
    current.complete = true;
  } catch (error) {
    if (!isAbort(error) && requests.owns(own)) showError($('subjects-error'), `Could not read subjects: ${errorMessage(error)}`);
  } finally {
    if (requests.owns(own)) {
      requests.finish(own);
      if (!running()) done(current.complete ? `${current.subjects.length.toLocaleString('en-US')} subjects match.` : '');
    }
    show();
  }
}

function show() {
  const count = $('subjects-count');
  const n = rows();
  count.dataset.value = String(n);
  if (matches) {
    const m = matches;
    count.textContent = `${m.subjects.length.toLocaleString('en-US')} of ${m.read.toLocaleString('en-US')} subjects match${m.complete ? '' : ' so far'}`;
  } else if (!running()) {
    count.textContent = tree.root.hasChildren === false ? 'No subjects.' : `${n.toLocaleString('en-US')} shown`;
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
  $('subjects-count').textContent = text;
}

function done(status) {
  $('subjects-cancel').disabled = true;
  $('subject-tree').setAttribute('aria-busy', 'false');
  $('subjects-status').textContent = status;
  show();
}
