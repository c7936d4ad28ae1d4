// Event types: known types with their schemas, and schema registration
// (offered when the token holds the "schemas" grant and the service is not
// in read-only mode; otherwise disabled with the reasons beside it).
import { streamNDJSON, request, isAbort, Latest, ApiError } from '../api.js';
import { $, el, showError, errorMessage, offer } from '../dom.js';
import { getHealth, mode } from '../health.js';
import * as access from '../access.js';
import { rowKeys, focusRow } from '../keys.js';

const requests = new Latest();
let types = new Map();
let readOnly = false; // the service's mode, as the health report said last
let modeCheck = 0;
let registering = false; // a registration is under way: its button stays disabled

const NO_GRANT = 'This token may not register schemas: that needs the “schemas” and “query” grants, since a registration checks every event of the type.';
const READ_ONLY = 'The service is in read-only mode: it refuses schema registrations until it is restarted without --read-only.';

function offerRegister() {
  const reasons = [];
  if (!access.has('schemas') || !access.has('query')) reasons.push(NO_GRANT);
  if (readOnly) reasons.push(READ_ONLY);
  offer($('register'), reasons.length === 0, reasons.join(' '));
  if (registering) $('register-submit').disabled = true;
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
    load();
    checkMode();
  });
  const tbody = $('types-table').tBodies[0];
  tbody.addEventListener('click', (event) => {
    const row = event.target.closest('tr[data-type]');
    if (row) showSchema(row.dataset.type);
  });
  rowKeys(tbody, 'tr[data-type]', (row) => showSchema(row.dataset.type));
  $('register').addEventListener('submit', (event) => {
    event.preventDefault();
    register();
  });
}

export function enter() {
  offerRegister();
  checkMode();
  $('types-refresh').disabled = !access.has('read');
  if (access.has('read')) {
    load();
    return;
  }
  types = new Map();
  $('types-table').tBodies[0].replaceChildren(el('tr', {},
    el('td', { colSpan: 4, class: 'muted', text: 'This token may not read event types: that needs a “read” grant.' })));
}

export function leave() {
  requests.stop();
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
  const rows = [...types.values()].map((t) => {
    const hasSchema = Object.prototype.hasOwnProperty.call(t, 'schema');
    // The row is the table's keyboard stop (Enter shows the schema); the
    // button is for the mouse and for reading.
    return el('tr', { 'data-type': t.eventType, tabindex: -1 },
      el('td', { class: 'mono', text: t.eventType, 'data-label': 'Type' }),
      el('td', { text: t.isPhantom ? 'yes' : 'no', 'data-label': 'Phantom' }),
      el('td', { text: hasSchema ? 'yes' : 'no', 'data-label': 'Schema' }),
      el('td', { class: 'actions' }, el('button', { type: 'button', class: 'secondary small', text: 'View', tabindex: -1, 'aria-label': `View schema of ${t.eventType}` })));
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
