// Verify the store: POST /api/v1/verify-store streams heartbeats while the
// service checks a snapshot of the store, then one verification line. The
// elapsed time shows while it runs; then the outcome. A server without the
// endpoint (404) gets a clear "not available" message.
import { streamNDJSON, isAbort, ApiError } from '../api.js';
import { $, el, errorMessage } from '../dom.js';

const PATH = '/api/v1/verify-store';
let controller = null;
let started = 0;
let heartbeats = 0;
let ticker = 0;

export function init() {
  $('verify-start').addEventListener('click', () => {
    start();
  });
  $('verify-cancel').addEventListener('click', cancel);
}

export function cancel() {
  if (controller) controller.abort();
}

async function start() {
  controller = new AbortController();
  const own = controller;
  started = performance.now();
  heartbeats = 0;
  const focusCancel = document.activeElement === $('verify-start');
  setState('running');
  if (focusCancel) $('verify-cancel').focus();
  let outcome = null;
  try {
    for await (const item of streamNDJSON(PATH, {}, { signal: own.signal })) {
      if (item.type === 'heartbeat') {
        heartbeats += 1;
        tick();
      } else if (item.type === 'verification') {
        outcome = item.payload;
      }
    }
    if (!outcome) throw new Error('the stream ended without a verification line.');
    show(outcome);
  } catch (error) {
    if (isAbort(error)) setState('cancelled');
    else if (error instanceof ApiError && error.status === 404) setState('unavailable');
    else fail(`The verification could not run: ${errorMessage(error)}`);
  } finally {
    if (controller === own) controller = null;
  }
}

function show(outcome) {
  const events = Number(outcome.events).toLocaleString('en-US');
  if (outcome.verified === true) {
    setState('verified', el('p', { class: 'success' },
      `Verified: ${events} ${events === '1' ? 'event' : 'events'}, every hash, link and index checked in ${seconds()} s. Head hash `,
      el('code', { class: 'hash', text: outcome.headHash || '—' })));
  } else {
    setState('failed', el('p', { class: 'error' },
      `Verification failed after checking ${events} events: `, el('strong', { text: String(outcome.problem || 'no problem given') })));
  }
}

function fail(message) {
  setState('error', el('p', { class: 'error', text: message }));
}

function seconds() {
  return ((performance.now() - started) / 1000).toFixed(1);
}

function tick() {
  const text = $('verify-elapsed');
  text.dataset.heartbeats = String(heartbeats);
  text.textContent = `Running for ${Math.floor((performance.now() - started) / 1000)} s…`;
}

function setState(state, message = null) {
  const focused = document.activeElement;
  const running = state === 'running';
  $('verify').dataset.state = state;
  $('verify-start').disabled = running;
  $('verify-cancel').disabled = !running;
  clearInterval(ticker);
  if (running) {
    ticker = setInterval(tick, 1000);
    tick();
  } else {
    $('verify-elapsed').textContent = state === 'cancelled' ? `Cancelled after ${seconds()} s.` : '';
  }
  if (state === 'unavailable') {
    message = el('p', { class: 'error' }, 'Verify-store is not available on this server: it answered 404 to ',
      el('code', { text: `POST ${PATH}` }), '. A newer eventstore has it; meanwhile ',
      el('code', { text: 'eventstore verify' }), ' checks a stopped store.');
  }
  const outcome = $('verify-outcome');
  outcome.replaceChildren(...(message ? [message] : []));
  outcome.hidden = !message;
  const status = { running: 'Verification running.', cancelled: 'Verification cancelled.' }[state];
  $('verify-status').textContent = status || (message ? message.textContent : '');
  if (!running && (focused === $('verify-cancel') || focused === document.body)) $('verify-start').focus();
}
