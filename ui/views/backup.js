// Backup: POST /api/v1/backup saved by the browser as a file through a
// download ticket (../download.js), however large; the page never holds
// it. A progress bar follows the event lines the server sent out of the
// Eventstore-Backup-Events header. At the end the page says exactly what
// was checked: that the server sent every announced event line and the
// last one's hash is the Eventstore-Backup-Head-Hash header; what the
// browser wrote to disk it cannot see. Cancel stops the download.
import { $, showError, errorMessage, formatBytes } from '../dom.js';
import { Download, failure } from '../download.js';

const PATH = '/api/v1/backup';
const ZERO_HASH = '0'.repeat(64);
let current = null; // the Download running
let run = null; // { name, status }
let frame = 0;

export function init() {
  $('backup-start').addEventListener('click', () => {
    start();
  });
  $('backup-cancel').addEventListener('click', cancel);
}

// Stops the backup in progress, if any.
function cancel() {
  if (current) current.cancel().catch(() => {});
}

async function start() {
  showError($('backup-error'), '');
  $('backup-summary').textContent = '';
  const name = `eventstore-backup-${new Date().toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-')}.ndjson`;
  const body = $('backup-schemas').checked ? {} : { schemas: false };
  const own = new Download(PATH, body, name);
  current = own;
  run = { name, status: null };
  const focusCancel = document.activeElement === $('backup-start');
  setState('running');
  if (focusCancel) $('backup-cancel').focus();
  try {
    await own.start();
    const status = await own.follow((s) => {
      run.status = s;
      schedule();
    });
    if (status.state !== 'done') {
      setState(status.state === 'cancelled' ? 'cancelled' : 'error');
      if (status.state !== 'cancelled') showError($('backup-error'), `The backup failed: ${failure(status)}. Delete the partial file if your browser kept one.`);
      return;
    }
    const problem = check(status);
    if (problem) {
      setState('error');
      showError($('backup-error'), `The backup is not whole: ${problem} Do not keep the file.`);
      return;
    }
    describe(status);
    setState('done');
  } catch (error) {
    setState('error');
    showError($('backup-error'), `The backup failed, no file was kept: ${errorMessage(error)}`);
  } finally {
    if (current === own) current = null;
  }
}

// What is wrong with a backup the server sent whole, or ''.
function check(status) {
  const expected = announced(status);
  const events = status.lines.event || 0;
  if (expected === null) return 'the answer had no Eventstore-Backup-Events header.';
  if (events !== expected) return `${events.toLocaleString('en-US')} event lines were sent, ${expected.toLocaleString('en-US')} were announced.`;
  const head = status.headers['Eventstore-Backup-Head-Hash'] || '';
  const last = status.lastEventHash || ZERO_HASH;
  if (last !== head) return `the last event's hash ${last} is not the announced head hash ${head}.`;
  return '';
}

function announced(status) {
  const value = status && status.headers['Eventstore-Backup-Events'];
  return value === undefined ? null : Number(value);
}

function describe(status) {
  const events = status.lines.event || 0;
  const schemas = status.lines.schema || 0;
  const withSchemas = schemas ? ` and ${schemas.toLocaleString('en-US')} ${schemas === 1 ? 'schema' : 'schemas'}` : '';
  const head = status.headers['Eventstore-Backup-Head-Hash'] || ZERO_HASH;
  $('backup-summary').textContent = `Sent ${run.name} (${formatBytes(status.bytes)}): all ${events.toLocaleString('en-US')} announced events${withSchemas}; `
    + `the server checked that the last event's hash is the head hash ${head}. `
    + 'It cannot see your disk: your browser\'s downloads list shows whether it wrote the file whole.';
}

function setState(state) {
  const focused = document.activeElement;
  $('backup').dataset.state = state;
  const running = state === 'running';
  $('backup-start').disabled = running;
  $('backup-cancel').disabled = !running;
  $('backup-schemas').disabled = running;
  $('backup-ready').hidden = state !== 'done';
  update();
  const status = {
    running: 'Backup running.',
    done: `Backup saved: ${$('backup-summary').textContent}`,
    cancelled: 'Backup cancelled.',
    error: 'Backup failed.',
  }[state];
  if (status) $('backup-status').textContent = status;
  if (!running && (focused === $('backup-cancel') || focused === document.body)) $('backup-start').focus();
}

// The progress follows the status at most once a frame.
function schedule() {
  if (!frame) frame = requestAnimationFrame(update);
}

function update() {
  cancelAnimationFrame(frame);
  frame = 0;
  if (!run) return;
  const state = $('backup').dataset.state;
  const status = run.status;
  const expected = announced(status);
  const events = status ? status.lines.event || 0 : 0;
  const bar = $('backup-progress');
  bar.hidden = state !== 'running' && state !== 'done';
  if (expected === null) {
    bar.removeAttribute('value');
  } else {
    bar.max = Math.max(expected, 1);
    bar.value = expected === 0 ? 1 : Math.min(events, expected);
  }
  const count = $('backup-count');
  count.dataset.events = String(events);
  count.dataset.expected = expected === null ? '' : String(expected);
  count.dataset.bytes = String(status ? status.bytes : 0);
  if (state === 'running' && (!status || status.state === 'pending')) {
    count.textContent = 'Waiting for the browser to start the download…';
    return;
  }
  const of = expected === null ? '' : ` of ${expected.toLocaleString('en-US')}`;
  const percent = expected ? ` (${Math.floor((100 * Math.min(events, expected)) / expected)} %)` : '';
  const progress = `${events.toLocaleString('en-US')}${of} events${percent}, ${formatBytes(status ? status.bytes : 0)} sent`;
  count.textContent = {
    running: progress,
    done: progress,
    cancelled: `Cancelled after ${progress}.`,
    error: `Stopped after ${progress}.`,
  }[state] || '';
}
