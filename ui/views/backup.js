// Backup: POST /api/v1/backup read line by line into a Spool (the server's
// bytes, never decoded into objects and written again), with a progress
// bar of event lines received out of the Eventstore-Backup-Events header.
// The file is offered (a download link to an object URL) only when that
// many event lines arrived and the last one's hash is the
// Eventstore-Backup-Head-Hash header; Cancel aborts the request.
import { readLines, lineText, parseLine, startsWith, isAbort } from '../api.js';
import { $, showError, errorMessage, formatBytes } from '../dom.js';
import { Spool } from '../lines.js';

const PATH = '/api/v1/backup';
const encoder = new TextEncoder();
const EVENT = encoder.encode('{"type":"event",');
const SCHEMA = encoder.encode('{"type":"schema",');
const ZERO_HASH = '0'.repeat(64);
const spool = new Spool();
let controller = null;
let run = null; // { expected, headHash, events, schemas, bytes, last }
let url = '';
let frame = 0;

export function init() {
  $('backup-start').addEventListener('click', () => {
    start();
  });
  $('backup-cancel').addEventListener('click', cancel);
}

export function cancel() {
  if (controller) controller.abort();
}

async function start() {
  discard();
  controller = new AbortController();
  const own = controller;
  run = { expected: null, headHash: '', events: 0, schemas: 0, bytes: 0, last: null };
  const focusCancel = document.activeElement === $('backup-start');
  setState('running');
  if (focusCancel) $('backup-cancel').focus();
  const onOpen = (response) => {
    const events = response.headers.get('Eventstore-Backup-Events');
    run.expected = events === null ? null : Number(events);
    run.headHash = response.headers.get('Eventstore-Backup-Head-Hash') || '';
    schedule();
  };
  const body = $('backup-schemas').checked ? {} : { schemas: false };
  try {
    for await (const batch of readLines(PATH, body, { signal: own.signal, onOpen })) {
      for (const line of batch) take(line);
      schedule();
    }
    check();
    offer();
    setState('done');
  } catch (error) {
    spool.clear();
    if (isAbort(error)) {
      setState('cancelled');
    } else {
      setState('error');
      showError($('backup-error'), `The backup failed, no file was kept: ${errorMessage(error)}`);
    }
  } finally {
    if (controller === own) controller = null;
  }
}

// Keeps a line's bytes; counts event and schema lines; an error line throws.
function take(line) {
  if (startsWith(line, EVENT)) {
    run.events += 1;
    run.last = line;
  } else if (startsWith(line, SCHEMA)) {
    run.schemas += 1;
  } else {
    parseLine(lineText(line));
  }
  run.bytes += line.length;
  spool.append(line);
}

// Throws unless the announced number of event lines arrived and the last
// one's hash is the announced head hash.
function check() {
  const { expected, headHash, events, last } = run;
  if (expected === null || !Number.isSafeInteger(expected)) throw new Error('the response has no Eventstore-Backup-Events header.');
  if (events !== expected) throw new Error(`${events.toLocaleString('en-US')} event lines arrived, ${expected.toLocaleString('en-US')} were announced.`);
  const hash = last ? String(parseLine(lineText(last)).payload.hash) : ZERO_HASH;
  if (hash !== headHash) throw new Error(`the last event's hash ${hash} is not the announced head hash ${headHash}.`);
}

function offer() {
  const blob = spool.blob('application/x-ndjson');
  spool.clear();
  url = URL.createObjectURL(blob);
  const name = `eventstore-backup-${new Date().toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-')}.ndjson`;
  const link = $('backup-download');
  link.href = url;
  link.download = name;
  link.textContent = `Save ${name}`;
  const schemas = run.schemas ? ` and ${run.schemas.toLocaleString('en-US')} ${run.schemas === 1 ? 'schema' : 'schemas'}` : '';
  $('backup-summary').textContent = `(${formatBytes(blob.size)}: ${run.events.toLocaleString('en-US')} events${schemas}, head hash checked)`;
}

// Forgets the previous backup's file.
function discard() {
  if (url) URL.revokeObjectURL(url);
  url = '';
  spool.clear();
  $('backup-download').removeAttribute('href');
  showError($('backup-error'), '');
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
    done: `Backup ready: ${$('backup-summary').textContent}`,
    cancelled: 'Backup cancelled.',
    error: 'Backup failed.',
  }[state];
  if (status) $('backup-status').textContent = status;
  if (!running && (focused === $('backup-cancel') || focused === document.body)) {
    (state === 'done' ? $('backup-download') : $('backup-start')).focus();
  }
}

// The progress follows the stream at most once a frame.
function schedule() {
  if (!frame) frame = requestAnimationFrame(update);
}

function update() {
  cancelAnimationFrame(frame);
  frame = 0;
  if (!run) return;
  const state = $('backup').dataset.state;
  const { expected, events } = run;
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
  const of = expected === null ? '' : ` of ${expected.toLocaleString('en-US')}`;
  const percent = expected ? ` (${Math.floor((100 * Math.min(events, expected)) / expected)} %)` : '';
  const progress = `${events.toLocaleString('en-US')}${of} events${percent}, ${formatBytes(run.bytes)} received`;
  count.textContent = {
    running: progress,
    done: progress,
    cancelled: `Cancelled after ${progress}.`,
    error: `Stopped after ${progress}.`,
  }[state] || '';
}
