// Query: runs an EventQL query and shows its rows as they stream in, in a
// virtual grid (as a table or as JSON), with progress, Cancel, and an
// export of the row lines exactly as the server sent them.
import { readLines, lineText, parseLine, startsWith, isAbort, ApiError, Latest } from '../api.js';
import { $, el, showError, errorMessage } from '../dom.js';
import { LineStore } from '../lines.js';
import { QueryResult } from './query-result.js';

const PATH = '/api/v1/run-eventql-query';
const ROW = new TextEncoder().encode('{"type":"row","payload":');
const requests = new Latest();
let store = null;
let result = null;
let run = null; // { controller, started }
let frame = 0;

export function init() {
  store = new LineStore(() => result.list.refresh());
  result = new QueryResult(store);
  $('query-run').addEventListener('click', () => {
    start();
  });
  $('query-cancel').addEventListener('click', cancel);
  $('query-text').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      start();
    }
  });
  $('query-as-table').addEventListener('click', () => setView(false));
  $('query-as-json').addEventListener('click', () => setView(true));
  $('query-export').addEventListener('click', exportRows);
  setView(false);
  setState('idle');
}

export function enter() {}

export function leave() {
  cancel();
}

function setView(json) {
  $('query-as-table').setAttribute('aria-pressed', String(!json));
  $('query-as-json').setAttribute('aria-pressed', String(json));
  result.setJSON(json);
}

function cancel() {
  if (run) run.controller.abort();
}

async function start() {
  const controller = requests.start();
  run = { controller, started: performance.now() };
  store.clear();
  result.reset();
  showError($('query-error'), '');
  setState('running');
  try {
    for await (const batch of readLines(PATH, { query: $('query-text').value }, { signal: controller.signal })) {
      if (!requests.owns(controller)) return;
      for (const line of batch) take(line);
      schedule();
    }
    if (requests.owns(controller)) setState('done');
  } catch (error) {
    if (!requests.owns(controller)) return;
    if (isAbort(error)) {
      setState('cancelled');
    } else {
      setState('error');
      showQueryError(error);
    }
  } finally {
    requests.finish(controller);
  }
}

// Keeps a row line's bytes; a heartbeat is dropped, an error line throws.
function take(line) {
  if (startsWith(line, ROW)) {
    store.append(line);
    return;
  }
  const item = parseLine(lineText(line));
  if (item && item.type === 'row') store.append(line);
}

// The grid and the count follow the stream at most once a frame.
function schedule() {
  if (!frame) frame = requestAnimationFrame(update);
}

function update() {
  cancelAnimationFrame(frame);
  frame = 0;
  const state = $('view-query').dataset.state;
  result.update(state !== 'running');
  const count = $('query-count');
  const n = store.count;
  const rows = `${n.toLocaleString('en-US')} ${n === 1 ? 'row' : 'rows'}`;
  const seconds = run ? ((performance.now() - run.started) / 1000).toFixed(1) : '0';
  count.dataset.value = String(n);
  count.textContent = {
    idle: '',
    running: `Running… ${rows}, ${formatSize(store.size)}, ${seconds} s`,
    done: `${rows} in ${seconds} s`,
    cancelled: `Cancelled after ${rows}`,
    error: `${rows} before the error`,
  }[state];
}

function setState(state) {
  $('view-query').dataset.state = state;
  const running = state === 'running';
  $('query-run').disabled = running;
  $('query-cancel').disabled = !running;
  $('query-export').disabled = running || store.count === 0;
  $('query-table').setAttribute('aria-busy', String(running));
  update();
  const status = { running: 'Query running.', done: `Query done: ${$('query-count').textContent}.`, cancelled: `${$('query-count').textContent}.` }[state];
  if (status) $('query-status').textContent = status;
}

function formatSize(bytes) {
  return bytes < 1 << 20 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`;
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
  if (error instanceof ApiError && error.status === 200) {
    showError($('query-error'), `The query stopped with an error after ${store.count.toLocaleString('en-US')} rows: ${message}`);
  } else if (error instanceof ApiError) {
    showError($('query-error'), message);
  } else {
    showError($('query-error'), `Could not run the query: ${message}`);
  }
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

// Downloads the row lines as received: the file is the response body without
// its heartbeat (and error) lines, byte for byte.
function exportRows() {
  const url = URL.createObjectURL(store.blob('application/x-ndjson'));
  const link = el('a', { href: url, download: 'query.ndjson' });
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
