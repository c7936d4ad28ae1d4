// Live tail: observes new events from the current head, newest first. The
// list is not a live region: assistive technology hears a polite summary
// ("12 new events") at most every few seconds instead of every row.
import { streamNDJSON, isAbort, Latest } from '../api.js';
import * as access from '../access.js';
import { getHealth, check } from '../health.js';
import { $, el, errorMessage, formatTime } from '../dom.js';

const MAX_ITEMS = 500;
const SUMMARY_MS = 5000;
const requests = new Latest();
let paused = false;
let buffer = [];
let beatTimer = null;
let frame = 0;
let received = 0;
let announced = 0;
let summaryTimer = 0;

export function init() {
  $('live-form').addEventListener('submit', (event) => {
    event.preventDefault();
    start();
  });
  $('live-pause').addEventListener('click', togglePause);
  $('live-stop').addEventListener('click', () => stop('stopped'));
}

export function enter() {
  if (!requests.running) $('live-subject').value = access.startSubject($('live-subject').value.trim() || '/');
}

export function leave() {
  if (requests.running) stop('stopped');
}

function setStatus(text, state = text) {
  $('live-status').textContent = text;
  $('live-status').dataset.state = state;
}

function setRunning(running) {
  clearInterval(summaryTimer);
  if (running) summaryTimer = setInterval(summarize, SUMMARY_MS);
  $('live-pause').disabled = !running;
  $('live-stop').disabled = !running;
  $('live-start').textContent = running ? 'Restart' : 'Start';
  if (!running) setPaused(false);
}

function setPaused(value) {
  paused = value;
  $('live-pause').setAttribute('aria-pressed', String(value));
  $('live-pause').textContent = value ? 'Resume' : 'Pause';
}

function stop(status) {
  requests.stop();
  flush();
  setRunning(false);
  setStatus(status, status === 'stopped' ? 'stopped' : 'error');
}

function togglePause() {
  if (!requests.running) return;
  setPaused(!paused);
  if (paused) {
    setStatus('paused');
  } else {
    flush();
    setStatus('connected');
  }
}

async function start() {
  const own = requests.start();
  buffer = [];
  received = 0;
  announced = 0;
  count();
  setPaused(false);
  setRunning(true);
  setStatus('connecting…', 'connecting');
  $('live-events').replaceChildren();
  const subject = $('live-subject').value.trim() || '/';
  const options = { recursive: $('live-recursive').checked };
  try {
    const events = check(await getHealth({ signal: own.signal }), 'storage:events');
    const count = events ? Number(events.observedValue) : 0;
    if (count > 0) options.lowerBound = { id: String(count), type: 'inclusive' };
    if (!requests.owns(own)) return;
    const onOpen = () => {
      if (requests.owns(own) && !paused) setStatus('connected');
    };
    const stream = streamNDJSON('/api/v1/observe-events', { subject, options }, { signal: own.signal, onOpen });
    for await (const item of stream) {
      if (!requests.owns(own)) return;
      if (item.type === 'heartbeat') beat();
      else if (item.type === 'event') receive(item.payload);
    }
    if (requests.owns(own)) {
      requests.finish(own);
      flush();
      setRunning(false);
      setStatus('stopped: the stream ended', 'stopped');
    }
  } catch (error) {
    if (isAbort(error) || !requests.owns(own)) return;
    requests.finish(own);
    flush();
    setRunning(false);
    setStatus(`error: ${errorMessage(error)}`, 'error');
  }
}

function beat() {
  const node = $('live-heartbeat');
  node.dataset.last = String(Date.now());
  node.classList.add('beat');
  clearTimeout(beatTimer);
  beatTimer = setTimeout(() => node.classList.remove('beat'), 400);
  if (requests.running && !paused && $('live-status').dataset.state !== 'connected') setStatus('connected');
}

function receive(event) {
  const type = $('live-type').value.trim();
  if (type && event.type !== type) return;
  buffer.push(event);
  received += 1;
  if (paused) $('live-pause').textContent = `Resume (${buffer.length} buffered)`;
  else if (!frame) frame = requestAnimationFrame(flush);
}

// Inserts the buffered events (at most a list's worth) in one go, once a frame.
function flush() {
  cancelAnimationFrame(frame);
  frame = 0;
  count();
  if (!buffer.length) return;
  const items = document.createDocumentFragment();
  for (const event of buffer.slice(-MAX_ITEMS).reverse()) {
    items.append(el('li', { 'data-id': event.id },
      el('span', { class: 'num nowrap', text: `#${event.id}` }),
      el('span', { class: 'nowrap time', text: formatTime(event.time), title: event.time }),
      el('span', { class: 'subject', text: event.subject }),
      el('span', { class: 'type', text: event.type })));
  }
  buffer = [];
  const list = $('live-events');
  list.prepend(items);
  while (list.children.length > MAX_ITEMS) list.lastElementChild.remove();
}

function count() {
  $('live-count').textContent = received ? `${received.toLocaleString('en-US')} received` : '';
}

function summarize() {
  if (received === announced) return;
  const n = received - announced;
  announced = received;
  $('live-summary').textContent = `${n.toLocaleString('en-US')} new ${n === 1 ? 'event' : 'events'}`;
}
