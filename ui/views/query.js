// Query: runs an EventQL query and shows its rows as they stream in, in a
// virtual grid (as a table or as JSON), with progress, Cancel, and an
// export: the query runs again on the server and the browser saves its row
// lines as a file (../download.js), however many there are.
import { readLines, lineText, parseLine, startsWith, isAbort, ApiError, Latest } from '../api.js';
import { $, showError, errorMessage, formatBytes } from '../dom.js';
import { Download, failure } from '../download.js';
import { LineStore, describe } from '../lines.js';
import { QueryResult } from './query-result.js';

const PATH = '/api/v1/run-eventql-query';
const ROW = new TextEncoder().encode('{"type":"row","payload":');
const requests = new Latest();
let store = null;
let result = null;
let run = null; // { controller, started, query }
let exporting = null; // the export's Download
let frame = 0;
let unreadable = []; // [first, last] rows (0-based) whose block could not be read back

export function init() {
  store = new LineStore(() => result.list.refresh(), showUnreadable);
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
  $('query-export').addEventListener('click', () => {
    exportRows();
  });
  $('query-export-cancel').addEventListener('click', () => {
    if (exporting) exporting.cancel().catch(() => {});
  });
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
  run = { controller, started: performance.now(), query: $('query-text').value };
  store.clear();
  result.reset();
  unreadable = [];
  showError($('query-error'), '');
  showError($('query-read-error'), '');
  setState('running');
  try {
    let kept = true;
    for await (const batch of readLines(PATH, { query: run.query }, { signal: controller.signal })) {
      if (!requests.owns(controller)) return;
      for (const line of batch) {
        kept = take(line);
        if (!kept) break;
      }
      schedule();
      if (!kept) break; // ends the request
      const writes = store.ready(controller.signal);
      if (writes) await writes;
    }
    if (!requests.owns(controller)) return;
    if (kept) {
      setState('done');
    } else {
      setState('stopped');
      showError($('query-error'), `The query stopped after ${store.count.toLocaleString('en-US')} rows: ${store.stopped.message}. Export NDJSON saves every row; or narrow the query (WHERE, TOP).`);
    }
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
// Returns false when the store keeps no more rows.
function take(line) {
  if (startsWith(line, ROW)) return store.append(line);
  const item = parseLine(lineText(line));
  return item && item.type === 'row' ? store.append(line) : true;
}

// Says which rows cannot be shown because the browser could not read their
// block back; those rows say so too (query-result.js).
function showUnreadable(error, first, last) {
  unreadable.push([first, last]);
  const ranges = unreadable.slice(0, 3).map(([a, b]) => `${(a + 1).toLocaleString('en-US')}–${(b + 1).toLocaleString('en-US')}`);
  const more = unreadable.length > 3 ? ` and ${unreadable.length - 3} more blocks` : '';
  const rows = unreadable.reduce((n, [a, b]) => n + b - a + 1, 0);
  $('query-read-error').dataset.rows = String(rows);
  showError($('query-read-error'), `Rows ${ranges.join(', ')}${more} cannot be shown: the browser could not read them back from its storage (${describe(error)}). Run the query again, or Export NDJSON for every row.`);
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
  count.dataset.bytes = String(store.size);
  count.textContent = {
    idle: '',
    running: `Running… ${rows}, ${formatSize(store.size)}, ${seconds} s`,
    done: `${rows} in ${seconds} s`,
    cancelled: `Cancelled after ${rows}`,
    stopped: `${rows} kept, query stopped`,
    // Only a stream that failed after it started had rows before the
    // error; a query refused at once (400) never ran.
    error: run && run.failedAfterStart ? `${rows} before the error` : '',
  }[state];
}

function setState(state) {
  $('view-query').dataset.state = state;
  const running = state === 'running';
  $('query-run').disabled = running;
  $('query-cancel').disabled = !running;
  $('query-export').disabled = running || store.count === 0 || exporting !== null;
  $('query-table').setAttribute('aria-busy', String(running));
  update();
  const status = { running: 'Query running.', done: `Query done: ${$('query-count').textContent}.`, cancelled: `${$('query-count').textContent}.`, stopped: `Query stopped after ${$('query-count').dataset.value} rows.` }[state];
  if (status) $('query-status').textContent = status;
}

function formatSize(bytes) {
  return bytes < 1 << 20 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

function showQueryError(error) {
  // A stream that started answers 200 and ends with an error line; a
  // failure while rows were arriving (the connection dropped) also came
  // after the start. Either way the count says how many rows came first.
  if (run) run.failedAfterStart = (error instanceof ApiError && error.status === 200) || store.count > 0;
  update();
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

// Saves the rows of the query shown as a file: the query runs again on the
// server (the store may have changed since) and the browser streams its row
// lines, without heartbeats, to disk; the line under the toolbar says how
// many rows were sent and how the export ended.
async function exportRows() {
  if (!run || exporting) return;
  const own = new Download(PATH, { query: run.query }, 'query.ndjson');
  exporting = own;
  const line = $('query-export-status');
  const show = (text) => {
    line.textContent = text;
    line.hidden = !text;
  };
  line.dataset.state = 'running';
  line.dataset.rows = '0';
  $('query-export').disabled = true;
  $('query-export-cancel').hidden = false;
  show('Export: waiting for the browser to start the download…');
  try {
    await own.start();
    const status = await own.follow((s) => {
      line.dataset.rows = String(s.lines.row || 0);
      if (s.state === 'running') show(`Exporting: ${(s.lines.row || 0).toLocaleString('en-US')} rows, ${formatBytes(s.bytes)} sent…`);
    });
    const rows = (status.lines.row || 0).toLocaleString('en-US');
    line.dataset.state = status.state;
    if (status.state === 'done') show(`Exported ${rows} rows (${formatBytes(status.bytes)}) to query.ndjson: the query ran again on the server for the file.`);
    else show(`The export failed after ${rows} rows: ${failure(status)}. Delete the partial file if your browser kept one.`);
  } catch (error) {
    line.dataset.state = 'failed';
    show(`The export failed: ${errorMessage(error)}`);
  } finally {
    exporting = null;
    $('query-export-cancel').hidden = true;
    $('query-export').disabled = store.count === 0 || $('view-query').dataset.state === 'running';
  }
}
