// Query: runs an EventQL query and shows the rows as a table or as JSON.
import { streamNDJSON, isAbort, ApiError, Latest } from '../api.js';
import { $, el, showError, errorMessage } from '../dom.js';

const requests = new Latest();
let rows = [];

export function init() {
  $('query-run').addEventListener('click', () => {
    run();
  });
  $('query-text').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run();
    }
  });
  $('query-as-table').addEventListener('click', () => setView(false));
  $('query-as-json').addEventListener('click', () => setView(true));
  $('query-export').addEventListener('click', exportRows);
  setView(false);
  renderRows();
}

export function enter() {}

export function leave() {
  requests.stop();
}

function setView(json) {
  $('query-as-table').setAttribute('aria-pressed', String(!json));
  $('query-as-json').setAttribute('aria-pressed', String(json));
  $('query-table-wrap').hidden = json;
  $('query-json').hidden = !json;
}

async function run() {
  const own = requests.start();
  const view = $('view-query');
  view.dataset.state = 'running';
  showError($('query-error'), '');
  $('query-run').disabled = true;
  rows = [];
  renderRows('Running…');
  try {
    const stream = streamNDJSON('/api/v1/run-eventql-query', { query: $('query-text').value }, { signal: own.signal });
    for await (const item of stream) {
      if (!requests.owns(own)) return;
      if (item.type === 'row') rows.push(item.payload);
    }
    if (!requests.owns(own)) return;
    renderRows();
    view.dataset.state = 'done';
  } catch (error) {
    if (!requests.owns(own) || isAbort(error)) return;
    renderRows();
    showQueryError(error);
    view.dataset.state = 'error';
  } finally {
    if (requests.owns(own)) {
      requests.finish(own);
      $('query-run').disabled = false;
    }
  }
}

function showQueryError(error) {
  let message = errorMessage(error);
  const match = error instanceof ApiError ? /^invalid query: (\d+):(\d+): /.exec(message) : null;
  if (match) {
    const line = Number(match[1]);
    const col = Number(match[2]);
    message = `${message.slice(match[0].length)} (at line ${line}, column ${col})`;
    showError($('query-error'), `Invalid query: ${message}`);
    placeCaret(line, col);
    return;
  }
  showError($('query-error'), message);
}

function placeCaret(line, col) {
  const area = $('query-text');
  const lines = area.value.split('\n');
  let offset = 0;
  for (let i = 0; i < Math.min(line - 1, lines.length - 1); i += 1) offset += lines[i].length + 1;
  const lineText = lines[Math.min(line - 1, lines.length - 1)] || '';
  offset += Math.min(Math.max(col - 1, 0), lineText.length);
  area.focus();
  area.setSelectionRange(offset, offset);
}

function cellText(value) {
  if (value === undefined) return '';
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function renderRows(pending) {
  const table = $('query-table');
  const isObject = (r) => r !== null && typeof r === 'object' && !Array.isArray(r);
  const objects = rows.length > 0 && rows.every(isObject);
  let columns = ['value'];
  if (objects) {
    const keys = new Set();
    for (const row of rows) for (const key of Object.keys(row)) keys.add(key);
    columns = [...keys];
  }
  table.tHead.replaceChildren(el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', text: c }))));
  table.tBodies[0].replaceChildren(...rows.map((row) => el('tr', {},
    ...(objects ? columns.map((c) => el('td', { text: cellText(row[c]) })) : [el('td', { text: cellText(row) })]))));
  $('query-json').textContent = rows.map((row) => JSON.stringify(row)).join('\n');
  const count = $('query-count');
  count.dataset.value = String(rows.length);
  count.textContent = pending || `${rows.length} ${rows.length === 1 ? 'row' : 'rows'}`;
  $('query-export').disabled = rows.length === 0;
}

function exportRows() {
  const text = rows.map((row) => JSON.stringify(row)).join('\n') + (rows.length ? '\n' : '');
  const url = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
  const link = el('a', { href: url, download: 'query.ndjson' });
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
