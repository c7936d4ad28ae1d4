// Event types: known types with their schemas, and schema registration
// (offered when the token holds the "schemas" grant and the service is not
// in read-only mode; otherwise disabled with the reasons beside it).
//
// Below them the data indexes (docs/api.md §4.15), shown to a token with
// a "read" or "query" grant: each with its path, event types, state and,
// while it builds, how far the build got; read when the view is shown, on
// Refresh, after a change and every second while one builds. Registering
// and removing (removing asks in a dialog first) are there for a token
// with "schemas"; a type's row offers to index it.
import { streamNDJSON, request, postJSON, isAbort, Latest, ApiError } from '../api.js';
import { $, el, showError, errorMessage, offer, formatTime } from '../dom.js';
import { getHealth, mode } from '../health.js';
import * as access from '../access.js';
import { rowKeys, focusRow } from '../keys.js';

const requests = new Latest();
let types = new Map();
let readOnly = false; // the service's mode, as the health report said last
let modeCheck = 0;
let registering = false; // a registration is under way: its button stays disabled
let active = false; // the view is shown
let generation = 0; // counts the view's entries and exits: a timer of an earlier one does nothing

const NO_GRANT = 'This token may not register schemas: that needs the “schemas” and “query” grants, since a registration checks every event of the type.';
const READ_ONLY = 'The service is in read-only mode: it refuses schema registrations until it is restarted without --read-only.';

function offerRegister() {
  const reasons = [];
  if (!access.has('schemas') || !access.has('query')) reasons.push(NO_GRANT);
  if (readOnly) reasons.push(READ_ONLY);
  offer($('register'), reasons.length === 0, reasons.join(' '));
  if (registering) $('register-submit').disabled = true;
  offerIndexes();
}

// Reads the service's mode from the health report and offers the
// registration anew; a failure leaves the mode as it was.
async function checkMode() {
  const mine = ++modeCheck;
  try {
    const health = await getHealth();
    if (mine !== modeCheck) return;
    readOnly = mode(health) === 'read-only';
    offerRegister();
  } catch (error) {
    console.warn('reading the mode failed', error);
  }
}

export function init() {
  $('types-refresh').addEventListener('click', () => {
    if (access.has('read')) load();
    if (mayListIndexes()) loadIndexes();
    checkMode();
  });
  const tbody = $('types-table').tBodies[0];
  tbody.addEventListener('click', (event) => {
    const row = event.target.closest('tr[data-type]');
    if (!row) return;
    if (event.target.closest('button[data-action="index"]')) indexType(row.dataset.type);
    else showSchema(row.dataset.type);
  });
  rowKeys(tbody, 'tr[data-type]', (row) => showSchema(row.dataset.type));
  $('register').addEventListener('submit', (event) => {
    event.preventDefault();
    register();
  });
  initIndexes();
}

export function enter() {
  active = true;
  generation += 1;
  enterIndexes();
  offerRegister();
  checkMode();
  $('types-refresh').disabled = !access.has('read') && !mayListIndexes();
  if (access.has('read')) {
    load();
    return;
  }
  types = new Map();
  $('types-table').tBodies[0].replaceChildren(el('tr', {},
    el('td', { colSpan: 4, class: 'muted', text: 'This token may not read event types: that needs a “read” grant.' })));
}

export function leave() {
  active = false;
  generation += 1;
  requests.stop();
  indexReads.stop();
  clearTimeout(indexTimer);
  if ($('data-index-dialog').open) $('data-index-dialog').close();
}

async function load() {
  const own = requests.start();
  showError($('types-error'), '');
  const found = new Map();
  try {
    for await (const item of streamNDJSON('/api/v1/read-event-types', {}, { signal: own.signal })) {
      if (item.type === 'eventType' && item.payload) found.set(item.payload.eventType, item.payload);
    }
  } catch (error) {
    if (isAbort(error) || !requests.owns(own)) return;
    showError($('types-error'), `Could not read event types: ${errorMessage(error)}`);
    requests.finish(own);
    return;
  }
  if (!requests.owns(own)) return;
  requests.finish(own);
  types = found;
  render();
}

function render() {
  const indexable = mayListIndexes() && mayChangeIndexes();
  const rows = [...types.values()].map((t) => {
    const hasSchema = Object.prototype.hasOwnProperty.call(t, 'schema');
    // The row is the table's keyboard stop (Enter shows the schema); the
    // buttons are for the mouse and for reading (the data index form is
    // reached by Tab as well).
    return el('tr', { 'data-type': t.eventType, tabindex: -1 },
      el('td', { class: 'mono', text: t.eventType, 'data-label': 'Type' }),
      el('td', { text: t.isPhantom ? 'yes' : 'no', 'data-label': 'Phantom' }),
      el('td', { text: hasSchema ? 'yes' : 'no', 'data-label': 'Schema' }),
      el('td', { class: 'actions' },
        el('button', { type: 'button', class: 'secondary small', text: 'View', tabindex: -1, 'aria-label': `View schema of ${t.eventType}` }),
        indexable ? ' ' : null,
        indexable ? el('button', { type: 'button', class: 'secondary small', text: 'Index…', tabindex: -1, 'data-action': 'index', 'aria-label': `Add a data index on ${t.eventType}` }) : null));
  });
  if (!rows.length) rows.push(el('tr', {}, el('td', { colSpan: 4, class: 'muted', text: 'No event types.' })));
  $('types-table').tBodies[0].replaceChildren(...rows);
  focusRow(rows, -1, types.size ? rows[0] : null);
}

function showSchema(name) {
  const t = types.get(name);
  if (!t) return;
  for (const row of $('types-table').querySelectorAll('tr[data-type]')) {
    row.classList.toggle('selected', row.dataset.type === name);
  }
  $('type-schema-name').textContent = name;
  $('type-schema').textContent = Object.prototype.hasOwnProperty.call(t, 'schema')
    ? JSON.stringify(t.schema, null, 2)
    : 'No schema registered for this type.';
}

async function register() {
  showError($('register-error'), '');
  $('register-result').hidden = true;
  const eventType = $('register-type').value.trim();
  if (!eventType) {
    showError($('register-error'), 'Enter an event type.');
    return;
  }
  let schema;
  try {
    schema = JSON.parse($('register-schema').value);
  } catch (error) {
    showError($('register-error'), `The schema is not valid JSON: ${errorMessage(error)}`);
    return;
  }
  registering = true;
  $('register-submit').disabled = true;
  try {
    await request('/api/v1/register-event-schema', { method: 'POST', body: { eventType, schema } });
    $('register-result').textContent = `Schema registered for ${eventType}`;
    $('register-result').hidden = false;
    await load();
    showSchema(eventType);
  } catch (error) {
    showError($('register-error'), errorMessage(error));
    if (error instanceof ApiError && error.status === 503 && /read-only/.test(errorMessage(error))) readOnly = true;
  } finally {
    registering = false;
    offerRegister();
  }
}

// --- Data indexes -------------------------------------------------------

const API = '/api/v1/';
const INDEXES_MS = 1000; // the list is read again this often while an index builds
const INDEXES_AGAIN_MS = 5000; // ... or after a failed read
const INDEX_READ_ONLY = 'The service is in read-only mode: it refuses to register or remove data indexes until it is restarted without --read-only.';
const count = (n) => Number(n).toLocaleString('en-US');

const indexReads = new Latest();
let indexTimer = 0;
let indexes = []; // read-data-indexes payloads, by name
const indexRows = new Map(); // their rows, by name
let indexing = false; // a registration or removal is under way
let removing = ''; // the name of the index the dialog asks about

const mayListIndexes = () => access.has('read') || access.has('query');
const mayChangeIndexes = () => access.has('schemas');

// Wires the section (below the schema registration; its markup is in
// index.html): the list, the register form and the dialog that asks
// before a removal.
function initIndexes() {
  $('data-indexes-list').tBodies[0].addEventListener('click', (event) => {
    const button = event.target.closest('button[data-action="remove"]');
    if (button) askRemove(button.closest('tr[data-name]').dataset.name);
  });
  $('data-index-form').addEventListener('submit', (event) => {
    event.preventDefault();
    registerIndex();
  });
  $('data-index-dialog').addEventListener('close', () => {
    const name = removing;
    removing = '';
    if ($('data-index-dialog').returnValue === 'confirm' && name) removeIndex(name);
  });
}

// Shows the section as the token's grants allow and reads the list.
function enterIndexes() {
  const list = mayListIndexes();
  const change = mayChangeIndexes();
  $('data-indexes').hidden = !list;
  $('data-indexes').dataset.state = 'idle';
  $('data-index-form').hidden = !change;
  $('data-indexes-denied').hidden = change;
  // The list shown last belongs to the last time the view was shown (or
  // to another token): it goes before anything is read anew.
  indexes = [];
  indexRows.clear();
  $('data-indexes-list').tBodies[0].replaceChildren();
  $('data-indexes-list').closest('.table-wrap').hidden = true;
  $('data-indexes-empty').hidden = true;
  $('data-indexes-count').textContent = '';
  $('data-indexes-count').dataset.value = '';
  for (const id of ['data-indexes-error', 'data-indexes-done', 'data-index-error']) showError($(id), '');
  $('data-index-result').hidden = true;
  if (list) loadIndexes();
}

// Offers registration and removal unless a change is under way or the
// service is in read-only mode (which says why beside the form).
function offerIndexes() {
  offer($('data-index-form'), !readOnly, INDEX_READ_ONLY);
  if (indexing) $('data-index-submit').disabled = true;
  for (const button of $('data-indexes-list').querySelectorAll('button[data-action="remove"]')) {
    button.disabled = readOnly || indexing;
    button.title = readOnly ? INDEX_READ_ONLY : '';
  }
}

// Reads the data indexes; again in INDEXES_MS while one of them builds.
async function loadIndexes() {
  clearTimeout(indexTimer);
  const gen = generation;
  const own = indexReads.start();
  const section = $('data-indexes');
  if (section.dataset.state === 'idle') section.dataset.state = 'loading';
  $('data-indexes-list').setAttribute('aria-busy', 'true');
  const found = [];
  try {
    for await (const item of streamNDJSON(`${API}read-data-indexes`, {}, { signal: own.signal })) {
      if (item.type === 'dataIndex' && item.payload) found.push(item.payload);
    }
  } catch (error) {
    if (isAbort(error) || !indexReads.owns(own)) return;
    indexReads.finish(own);
    $('data-indexes-list').setAttribute('aria-busy', 'false');
    showError($('data-indexes-error'), `Could not read the data indexes: ${errorMessage(error)}`);
    section.dataset.state = 'error';
    scheduleIndexes(gen, INDEXES_AGAIN_MS);
    return;
  }
  if (!indexReads.owns(own)) return;
  indexReads.finish(own);
  $('data-indexes-list').setAttribute('aria-busy', 'false');
  showError($('data-indexes-error'), '');
  indexes = found;
  renderIndexes();
  section.dataset.state = 'ready';
  scheduleIndexes(gen, INDEXES_MS);
}

function scheduleIndexes(gen, ms) {
  clearTimeout(indexTimer);
  if (active && gen === generation && indexes.some((x) => x.state !== 'ready')) indexTimer = setTimeout(loadIndexes, ms);
}

// Shows the indexes: a row keeps its element (and so the focus of its
// button) from one read to the next, and only its cells change.
function renderIndexes() {
  const n = indexes.length;
  $('data-indexes-count').dataset.value = String(n);
  $('data-indexes-count').textContent = `(${count(n)})`;
  $('data-indexes-empty').hidden = n > 0;
  $('data-indexes-list').closest('.table-wrap').hidden = n === 0;
  const names = new Set(indexes.map((x) => x.name));
  for (const name of indexRows.keys()) if (!names.has(name)) indexRows.delete(name);
  const rows = indexes.map((x) => {
    let row = indexRows.get(x.name);
    if (!row) {
      row = newIndexRow(x.name);
      indexRows.set(x.name, row);
    }
    fillIndexRow(row, x);
    return row;
  });
  const tbody = $('data-indexes-list').tBodies[0];
  const same = tbody.children.length === rows.length && rows.every((row, i) => tbody.children[i] === row);
  if (!same) tbody.replaceChildren(...rows);
  offerIndexes();
}

function newIndexRow(name) {
  const cells = ['Name', 'Path', 'Event types', 'State', 'Progress', 'Created'].map((label) => el('td', { 'data-label': label }));
  cells[0].className = 'mono';
  cells[1].className = 'mono';
  cells[2].className = 'mono';
  const actions = el('td', { class: 'index-actions' });
  if (mayChangeIndexes()) {
    actions.append(el('button', { type: 'button', class: 'secondary small', text: 'Remove…', 'data-action': 'remove',
      'aria-haspopup': 'dialog', 'aria-label': `Remove data index ${name}` }));
  }
  return el('tr', { 'data-name': name }, ...cells, actions);
}

function fillIndexRow(row, x) {
  const [name, path, types, state, progress, created] = row.cells;
  const building = x.state !== 'ready';
  row.dataset.state = x.state;
  row.dataset.indexedEvents = String(x.indexedEvents);
  row.dataset.events = String(x.events);
  name.textContent = x.name;
  path.textContent = x.path === '' ? '"" (the whole data)' : x.path;
  types.textContent = Array.isArray(x.eventTypes) && x.eventTypes.length ? x.eventTypes.join(', ') : 'all';
  state.replaceChildren(el('span', { class: building ? 'badge warn' : 'badge pass', text: x.state }));
  const text = `${count(x.indexedEvents)} of ${count(x.events)} events`;
  if (building) {
    const percent = x.events > 0 ? Math.floor((x.indexedEvents * 100) / x.events) : 0;
    // One child: on phones the cell is a grid of its label and its content.
    progress.replaceChildren(el('span', {},
      el('progress', { max: Math.max(x.events, 1), value: x.indexedEvents, 'aria-label': `Build of ${x.name}` }),
      `${text} (${percent}%)`));
  } else {
    progress.replaceChildren(el('span', { text }));
  }
  created.textContent = formatTime(x.createdAt);
  created.title = x.createdAt || '';
}

// Opens the register form for the event type of a row.
function indexType(eventType) {
  if ($('data-indexes').hidden || $('data-index-form').hidden) return;
  $('data-index-types').value = eventType;
  showError($('data-index-error'), '');
  $('data-index-result').hidden = true;
  $('data-index-name').focus();
}

async function registerIndex() {
  showError($('data-index-error'), '');
  showError($('data-indexes-done'), '');
  $('data-index-result').hidden = true;
  const name = $('data-index-name').value.trim();
  const path = $('data-index-path').value;
  const eventTypes = $('data-index-types').value.split(',').map((t) => t.trim()).filter(Boolean);
  if (!name) {
    showError($('data-index-error'), 'Enter a name for the index.');
    $('data-index-name').focus();
    return;
  }
  const body = { name, path };
  if (eventTypes.length) body.eventTypes = eventTypes;
  indexing = true;
  offerIndexes();
  try {
    const x = await postJSON(`${API}register-data-index`, body);
    const on = x.path === '' ? 'the whole data' : x.path;
    $('data-index-result').textContent = x.state === 'ready'
      ? `Data index ${x.name} on ${on} registered: it is ready.`
      : `Data index ${x.name} on ${on} registered: it is being built from the log.`;
    $('data-index-result').hidden = false;
    for (const id of ['data-index-name', 'data-index-path', 'data-index-types']) $(id).value = '';
    if (!indexes.some((i) => i.name === x.name)) {
      indexes = [...indexes, x].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      renderIndexes();
    }
    loadIndexes();
  } catch (error) {
    showError($('data-index-error'), errorMessage(error));
    if (error instanceof ApiError && error.status === 503 && /read-only/.test(errorMessage(error))) readOnly = true;
  } finally {
    indexing = false;
    offerIndexes();
  }
}

function askRemove(name) {
  if (indexing) return;
  showError($('data-indexes-error'), '');
  showError($('data-indexes-done'), '');
  removing = name;
  $('data-index-dialog-name').textContent = name;
  $('data-index-confirm').textContent = `Remove ${name}`;
  $('data-index-dialog').returnValue = '';
  $('data-index-dialog').showModal();
}

async function removeIndex(name) {
  if (indexing) return;
  indexing = true;
  offerIndexes();
  try {
    await postJSON(`${API}remove-data-index`, { name });
    showError($('data-indexes-done'), `The data index ${name} was removed.`);
    gone(name);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      showError($('data-indexes-done'), `The data index ${name} was removed already.`);
      gone(name);
      return;
    }
    showError($('data-indexes-error'), `Could not remove ${name}: ${errorMessage(error)}`);
    if (error instanceof ApiError && error.status === 503 && /read-only/.test(errorMessage(error))) readOnly = true;
  } finally {
    indexing = false;
    offerIndexes();
  }
}

// Takes the index name off the list (its row held the focus: it goes to
// the section's heading) and reads the list again.
function gone(name) {
  const row = indexRows.get(name);
  const hadFocus = row && (row.contains(document.activeElement) || document.activeElement === document.body);
  indexes = indexes.filter((x) => x.name !== name);
  renderIndexes();
  if (hadFocus) $('h-data-indexes').focus();
  loadIndexes();
}
