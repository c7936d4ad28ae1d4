// Subscriptions: the list of subscriptions with their lag and consumers,
// charts of the lag over the last 15 minutes, and the selected
// subscription: its definition, consumers, partitions, and parked events
// with why they were parked and a replay of one or all. Reset and delete
// each ask in a dialog that names the subscription (and the start) first.
// Every list renders only the rows in view. A server without
// subscriptions (404) is said so in words instead of failing.
//
// What is read when: the list with read-subscriptions when the view is
// shown, on Refresh, after an action and every 30 s; its figures (lag,
// consumers, in flight, parked) follow the metrics the sampler takes every
// 2 s while the console is signed in, which also feed the charts, and a
// subscription the metrics name differently (new, gone, other consumers)
// has the list read again. The selected subscription is read every 2 s
// while shown, its parked events when their number changes (no more often
// than ten times the last read took).
import { streamNDJSON, readLines, lineText, parseLine, startsWith, postJSON, isAbort, ApiError, Latest } from '../api.js';
import { $, el, showError, errorMessage, formatTime } from '../dom.js';
import { VirtualList } from '../virtual.js';
import { Chart } from '../chart.js';
import { LineStore, describe } from '../lines.js';
import { members, pretty } from '../rawjson.js';
import * as sampler from '../sampler.js';

const API = '/api/v1/';
const LIST_MS = 30000;
const LIST_AGAIN_MS = 5000; // the soonest the metrics have the list read again
const DETAIL_MS = 2000;
const FILTER_MS = 150;
const ID = /^(0|[1-9][0-9]{0,18})$/;
const FIGURES = {
  eventstore_subscription_lag_events: 'lag',
  eventstore_subscription_consumers: 'consumerCount',
  eventstore_subscription_in_flight: 'inFlight',
  eventstore_subscription_parked: 'parked',
};
const PARKED_PREFIX = '{"type":"parkedEvent","payload":';
const PARKED_LINE = new TextEncoder().encode(PARKED_PREFIX);
const count = (n) => n.toLocaleString('en-US');
const plural = (n, one, many) => `${count(n)} ${n === 1 ? one : many}`;

const lists = new Latest(); // read-subscriptions
const details = new Latest(); // read-subscription of the selected one
const parkedReads = new Latest(); // read-parked-events of the selected one
let active = false;
let generation = 0;
let listTimer = 0;
let detailTimer = 0;
let filterTimer = 0;
let unavailable = false;
let listedAt = -Infinity; // when the last list read started

let subscriptions = []; // read-subscription bodies, by name
let shown = []; // those the filter matches
let selected = ''; // the selected subscription's name
let detail = null; // its read-subscription body
let parked = { name: '', store: new LineStore(), complete: false, at: -Infinity, took: 0 }; // its parked event lines, when read and how long it took
let parkedOpen = null; // { id, partition, index } of the parked event shown
let pending = null; // { name, start, label } of the dialog shown
let acting = false; // a replay, reset or delete runs (buttons stay enabled: a disabled one loses the focus)
let grids = null;
let charts = null;

// The lag of each subscription over the sampler's window: lagTimes[i] is
// the time of sample i, series values null where unknown.
const lagTimes = [];
const lagTotal = [];
const lagSeries = new Map();

/**
 * A virtual grid: a header row of the columns, and rows rendered from
 * cells(index) (an array of { text, title? } or null while loading);
 * onOpen(index, byKey) runs on Enter or a click.
 */
class Grid {
  constructor(id, columns, { cells, decorate = () => {}, onOpen = null }) {
    this.grid = $(id);
    this.cells = cells;
    this.decorate = decorate;
    const head = this.grid.querySelector('.vhead');
    head.replaceChildren(...columns.map((c) => el('div', { class: 'vcell', role: 'columnheader', text: c.label })));
    this.list = new VirtualList(this.grid, {
      header: head,
      bodyRole: 'rowgroup',
      createRow: () => el('div', { class: 'vrow', role: 'row' },
        ...columns.map((c) => el('div', { class: c.num ? 'vcell num' : 'vcell', role: 'gridcell', 'data-label': c.label }))),
      renderRow: (index, row) => this.#render(index, row),
      onKey: (index, event) => {
        if (!onOpen || (event.key !== 'Enter' && event.key !== ' ')) return;
        event.preventDefault();
        onOpen(index, true);
      },
    });
    if (onOpen) {
      this.list.body.addEventListener('click', (event) => {
        const row = event.target.closest('[data-index]');
        if (row) onOpen(Number(row.dataset.index), false);
      });
    }
  }

  /** Shows count rows; with top, from the first one. */
  show(n, top = false) {
    this.grid.setAttribute('aria-rowcount', String(n + 1));
    if (top) this.list.reset();
    this.list.setCount(n);
    this.list.refresh();
  }

  #render(index, row) {
    row.setAttribute('aria-rowindex', String(index + 2));
    const cells = this.cells(index);
    [...row.children].forEach((cell, i) => {
      const c = cells ? cells[i] : { text: i === 0 ? '…' : '' };
      cell.textContent = c.text;
      cell.title = c.title || (c.text.length > 24 ? c.text : '');
    });
    this.decorate(index, row);
  }
}

export function init() {
  charts = {
    total: new Chart($('chart-subscriptions-lag'), (v) => plural(Math.round(v), 'event', 'events')),
    one: new Chart($('chart-subscription-lag'), (v) => plural(Math.round(v), 'event', 'events'), 'not in the last sample'),
  };
  grids = {
    list: new Grid('subscriptions-list', [
      { label: 'Subscription' }, { label: 'Subject' }, { label: 'Lag', num: true }, { label: 'Consumers' },
      { label: 'In flight', num: true }, { label: 'Parked', num: true }, { label: 'Partitions', num: true },
    ], { cells: subscriptionCells, decorate: decorateSubscription, onOpen: (i, byKey) => select(shown[i].subscription, byKey) }),
    consumers: new Grid('subscription-consumers', [
      { label: 'Consumer' }, { label: 'Connected at' }, { label: 'Partitions' },
    ], { cells: consumerCells }),
    partitions: new Grid('subscription-partitions', [
      { label: 'Partition', num: true }, { label: 'Owner' }, { label: 'Position', num: true },
      { label: 'Epoch', num: true }, { label: 'In flight', num: true },
    ], { cells: partitionCells, decorate: (i, row) => { row.dataset.partition = String(detail.partitions[i].partition); } }),
    parked: new Grid('parked-list', [
      { label: 'Event id', num: true }, { label: 'Partition', num: true }, { label: 'Attempts', num: true },
      { label: 'Parked at' }, { label: 'Reason' }, { label: 'Subject' }, { label: 'Type' },
    ], { cells: parkedCells, decorate: decorateParked, onOpen: (i, byKey) => openParked(i, byKey) }),
  };
  parked.store = newParkedStore();
  // A failure here must not stop the sampler (and the dashboard's charts).
  sampler.subscribe((samples) => {
    try {
      sampleLag(samples);
    } catch (error) {
      console.error('subscriptions: sampling the lag failed', error);
    }
  });

  $('subscriptions-refresh').addEventListener('click', () => {
    showError($('subscriptions-done'), '');
    loadList(true);
    if (selected) loadDetail(true);
  });
  $('subscriptions-filter').addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => applyFilter(true), FILTER_MS);
  });
  $('reset-start').addEventListener('change', () => {
    const after = $('reset-start').value === 'after';
    $('reset-after').hidden = !after;
    document.querySelector('label[for="reset-after"]').hidden = !after;
    if (after) $('reset-after').focus();
  });
  $('subscription-reset').addEventListener('submit', (event) => {
    event.preventDefault();
    askReset();
  });
  $('delete-open').addEventListener('click', askDelete);
  $('reset-dialog').addEventListener('close', () => {
    const action = pending;
    pending = null;
    if ($('reset-dialog').returnValue === 'confirm' && action) reset(action);
  });
  $('delete-dialog').addEventListener('close', () => {
    const action = pending;
    pending = null;
    if ($('delete-dialog').returnValue === 'confirm' && action) remove(action);
  });
  $('parked-refresh').addEventListener('click', () => {
    loadParked(true);
  });
  $('parked-replay-all').addEventListener('click', () => {
    replay(null);
  });
  $('parked-replay').addEventListener('click', () => {
    if (parkedOpen) replay(parkedOpen);
  });
  $('parked-close').addEventListener('click', () => closeParked(true));
  $('parked-detail').addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    event.preventDefault();
    closeParked(true);
  });
}

export function enter(params) {
  active = true;
  generation += 1;
  unavailable = false;
  setState('loading');
  const name = params.get('subscription');
  loadList(true, name || '');
  if (selected) loadDetail(true);
  drawCharts();
}

export function leave() {
  active = false;
  generation += 1;
  clearTimeout(listTimer);
  clearTimeout(detailTimer);
  lists.stop();
  details.stop();
  parkedReads.stop();
  for (const id of ['reset-dialog', 'delete-dialog']) if ($(id).open) $(id).close();
}

function setState(state) {
  $('view-subscriptions').dataset.state = state;
}

// --- The list ---------------------------------------------------------

// Reads the subscriptions (force: even while a read runs), then selects
// select if given; again in LIST_MS while the view is shown.
async function loadList(force = false, select = '') {
  if (lists.running && !force) return;
  const gen = generation;
  const own = lists.start();
  listedAt = performance.now();
  clearTimeout(listTimer);
  $('subscriptions-list').setAttribute('aria-busy', 'true');
  const found = [];
  try {
    for await (const item of streamNDJSON(`${API}read-subscriptions`, {}, { signal: own.signal })) {
      if (item.type === 'subscription' && item.payload) found.push(summary(item.payload));
    }
  } catch (error) {
    if (isAbort(error) || !lists.owns(own)) return;
    lists.finish(own);
    $('subscriptions-list').setAttribute('aria-busy', 'false');
    if (!notAvailable(error)) {
      showError($('subscriptions-error'), `Could not read the subscriptions: ${errorMessage(error)}`);
      setState('error');
      scheduleList(gen, LIST_AGAIN_MS);
    }
    return;
  }
  if (!lists.owns(own)) return;
  lists.finish(own);
  $('subscriptions-list').setAttribute('aria-busy', 'false');
  showError($('subscriptions-error'), '');
  showAvailable();
  subscriptions = found;
  applyFilter(false);
  setState('ready');
  if (select) selectByName(select);
  scheduleList(gen);
}

function scheduleList(gen, ms = LIST_MS) {
  clearTimeout(listTimer);
  if (active && gen === generation && !unavailable) listTimer = setTimeout(() => loadList(), ms);
}

// A 404 (a server without subscriptions) says in words that the view has
// nothing to show here; reports whether it was one.
function notAvailable(error) {
  if (!(error instanceof ApiError) || error.status !== 404 || !/unknown route/.test(error.message)) return false;
  unavailable = true;
  clearTimeout(listTimer);
  clearTimeout(detailTimer);
  details.stop();
  parkedReads.stop();
  const text = `Subscriptions are not available on this server: it answered 404 “${error.message}” to read-subscriptions. A newer eventstore has them.`;
  $('subscriptions-unavailable-text').textContent = text;
  $('subscriptions-unavailable').hidden = false;
  $('subscriptions-main').hidden = true;
  setState('unavailable');
  return true;
}

function showAvailable() {
  $('subscriptions-unavailable').hidden = true;
  $('subscriptions-main').hidden = false;
}

function applyFilter(top) {
  const text = $('subscriptions-filter').value.trim().toLowerCase();
  shown = text
    ? subscriptions.filter((s) => s.subscription.toLowerCase().includes(text) || s.subject.toLowerCase().includes(text))
    : subscriptions;
  const n = subscriptions.length;
  const counter = $('subscriptions-count');
  counter.dataset.value = String(shown.length);
  counter.textContent = text ? `${count(shown.length)} of ${plural(n, 'subscription', 'subscriptions')} match` : plural(n, 'subscription', 'subscriptions');
  $('subscriptions-empty').hidden = n > 0;
  $('subscriptions-list').hidden = n === 0;
  grids.list.show(shown.length, top);
}

// A subscription of the list: its read-subscription body without the
// partitions (a thousand subscriptions of 1,024 partitions each would hold
// a million), and consumerCount, which the metrics keep up to date.
function summary(info) {
  return { ...info, partitions: null, consumerCount: info.consumers.length };
}

function subscriptionCells(index) {
  const s = shown[index];
  const names = s.consumers.map((c) => c.consumer);
  const n = s.consumerCount;
  return [
    { text: s.subscription },
    { text: s.subject + (s.options.recursive ? ' (recursive)' : '') },
    { text: count(s.lag) },
    { text: n && names.length === n ? `${n}: ${names.join(', ')}` : String(n), title: names.length === n ? names.join(', ') : '' },
    { text: count(s.inFlight) },
    { text: count(s.parked) },
    { text: count(s.options.partitions) },
  ];
}

function decorateSubscription(index, row) {
  const s = shown[index];
  row.dataset.name = s.subscription;
  row.setAttribute('aria-selected', String(s.subscription === selected));
}

// --- The selected subscription ----------------------------------------

// Selects the subscription name (a row of the list): byKey moves the focus
// to its details, as Enter opens them.
function select(name, byKey = false) {
  if (name !== selected) {
    selected = name;
    detail = null;
    details.stop();
    parkedReads.stop();
    closeParked(false);
    for (const id of ['subscription-error', 'subscription-status', 'parked-status', 'parked-error']) showError($(id), '');
    $('reset-start').value = 'beginning';
    $('reset-start').dispatchEvent(new Event('change'));
    $('reset-after').value = '';
    grids.list.list.refresh();
    $('subscription-name').textContent = name;
    $('subscription-detail').dataset.name = name;
    delete $('subscription-detail').dataset.loaded;
    $('subscription-definition').replaceChildren();
    $('subscription-updated').textContent = '—';
    grids.consumers.show(0);
    grids.partitions.show(0);
    $('subscription-detail').hidden = false;
    $('chart-subscription-lag-name').textContent = `Lag of ${name}`;
    drawCharts();
    loadDetail(true);
  }
  if (byKey) $('h-subscription-detail').focus();
}

function selectByName(name) {
  const index = shown.findIndex((s) => s.subscription === name);
  if (index >= 0) grids.list.list.scrollToIndex(index);
  select(name);
}

// Forgets the selection (the subscription is gone); the focus, if it was
// in the details, goes to the view's heading.
function unselect() {
  if ($('subscription-detail').contains(document.activeElement)) $('h-subscriptions').focus();
  selected = '';
  detail = null;
  clearTimeout(detailTimer);
  details.stop();
  parkedReads.stop();
  closeParked(false);
  grids.consumers.show(0);
  grids.partitions.show(0);
  parked.store.clear();
  parked = { name: '', store: parked.store, complete: false, at: -Infinity, took: 0 };
  grids.parked.show(0, true);
  $('subscription-detail').hidden = true;
  $('subscription-detail').dataset.name = '';
  $('chart-subscription-lag-name').textContent = 'Selected subscription';
  grids.list.list.refresh();
  drawCharts();
}

// Reads the selected subscription; again in DETAIL_MS while shown.
async function loadDetail(force = false) {
  if (details.running && !force) return;
  const name = selected;
  const gen = generation;
  const own = details.start();
  clearTimeout(detailTimer);
  try {
    const info = await postJSON(`${API}read-subscription`, { subscription: name }, { signal: own.signal });
    if (!details.owns(own) || name !== selected) return;
    details.finish(own);
    showDetail(info);
  } catch (error) {
    if (isAbort(error) || !details.owns(own)) return;
    details.finish(own);
    if (notAvailable(error)) return;
    if (error instanceof ApiError && error.status === 404) {
      gone(name);
      return;
    }
    $('subscription-detail').hidden = false;
    showError($('subscription-error'), `Could not read ${name}: ${errorMessage(error)}`);
  }
  if (active && gen === generation && selected === name) detailTimer = setTimeout(() => loadDetail(), DETAIL_MS);
}

function gone(name) {
  if (name === selected) unselect();
  showError($('subscriptions-done'), '');
  showError($('subscriptions-error'), `The subscription ${name} no longer exists.`);
  loadList(true);
}

function showDetail(info) {
  detail = info;
  showError($('subscription-error'), '');
  $('subscription-detail').hidden = false;
  $('subscription-updated').textContent = new Date().toLocaleTimeString();
  const o = info.options;
  const pairs = [
    ['Subject', `${info.subject}${o.recursive ? ' and its subtree' : ''}`],
    ['Event types', o.eventTypes ? o.eventTypes.join(', ') : 'all'],
    ['Created at', formatTime(info.createdAt)],
    ['Start', startText(o.start)],
    ['Lag', `${plural(info.lag, 'event', 'events')} after the positions, not in flight`],
    ['In flight', count(info.inFlight)],
    ['Parked', count(info.parked)],
    ['Partitions', count(o.partitions)],
    ['Max in flight', `${count(o.maxInFlight)} a partition`],
    ['Acknowledge timeout', o.acknowledgeTimeout],
    ['Max deliveries', count(o.maxDeliveries)],
  ];
  $('subscription-definition').replaceChildren(...pairs.flatMap(([key, value]) => [
    el('dt', { text: key }), el('dd', { class: 'mono', text: value, 'data-key': key })]));
  $('subscription-consumers-count').textContent = `(${count(info.consumers.length)})`;
  $('subscription-no-consumers').hidden = info.consumers.length > 0;
  $('subscription-consumers').hidden = info.consumers.length === 0;
  grids.consumers.show(info.consumers.length);
  $('subscription-partitions-count').textContent = `(${count(info.partitions.length)})`;
  grids.partitions.show(info.partitions.length);
  $('subscription-detail').dataset.loaded = 'true';
  // The row of the list follows too.
  const at = subscriptions.findIndex((s) => s.subscription === info.subscription);
  if (at >= 0) {
    subscriptions[at] = summary(info);
    const i = shown.findIndex((s) => s.subscription === info.subscription);
    if (i >= 0 && shown !== subscriptions) shown[i] = subscriptions[at];
    grids.list.list.refresh();
  }
  // Its parked events: at once for another subscription; else when their
  // number changed or a read did not finish, no sooner than the last one
  // took ten times.
  const due = performance.now() - parked.at > Math.max(DETAIL_MS, 10 * parked.took);
  if (parked.name !== info.subscription) loadParked(true);
  else if (!parkedReads.running && (!parked.complete || parked.store.count !== info.parked) && due) loadParked();
}

function startText(start) {
  if (start === 'beginning') return 'the beginning';
  if (start === 'end') return 'the end (the head at creation)';
  if (start && start.afterEventId !== undefined) return `after event ${start.afterEventId}`;
  return JSON.stringify(start);
}

function consumerCells(index) {
  const c = detail.consumers[index];
  return [
    { text: c.consumer },
    { text: formatTime(c.connectedAt), title: c.connectedAt },
    { text: c.partitions.length ? `${count(c.partitions.length)}: ${c.partitions.join(', ')}` : 'none (standing by)' },
  ];
}

function partitionCells(index) {
  const p = detail.partitions[index];
  return [
    { text: String(p.partition) },
    { text: p.consumer === null ? 'none' : p.consumer },
    { text: p.position === null ? 'none settled' : p.position },
    { text: String(p.epoch) },
    { text: count(p.inFlight) },
  ];
}

// --- Parked events ------------------------------------------------------

// Reads the selected subscription's parked events line by line into a
// LineStore (the server's bytes; a row is parsed when it comes into view).
// A new subscription's show as they arrive; a reread of the same one
// replaces the list when complete, so the rows do not flicker.
async function loadParked(force = false) {
  if (parkedReads.running && !force) return;
  const name = selected;
  const own = parkedReads.start();
  const fresh = parked.name !== name;
  const store = fresh ? parked.store : newParkedStore();
  const started = performance.now();
  if (fresh) {
    closeParked(false);
    parked = { name, store, complete: false, at: started, took: 0 };
    store.clear();
    showParked(true);
  }
  showError($('parked-error'), '');
  $('parked-list').setAttribute('aria-busy', 'true');
  try {
    for await (const batch of readLines(`${API}read-parked-events`, { subscription: name }, { signal: own.signal })) {
      if (!parkedReads.owns(own)) return;
      for (const line of batch) {
        if (startsWith(line, PARKED_LINE)) {
          if (!store.append(line)) throw new Error(`the list stopped after ${count(store.count)} events: ${store.stopped.message}`);
        } else {
          parseLine(lineText(line)); // a heartbeat; an error line throws
        }
      }
      if (fresh) showParked(false);
    }
  } catch (error) {
    if (isAbort(error) || !parkedReads.owns(own)) return;
    parkedReads.finish(own);
    $('parked-list').setAttribute('aria-busy', 'false');
    if (notAvailable(error)) return;
    if (error instanceof ApiError && error.status === 404) {
      gone(name);
      return;
    }
    showError($('parked-error'), `Could not read the parked events: ${errorMessage(error)}`);
    return;
  }
  if (!parkedReads.owns(own)) return;
  parkedReads.finish(own);
  $('parked-list').setAttribute('aria-busy', 'false');
  if (!fresh) {
    parked.store.clear();
    parked = { name, store, complete: true };
    if (parkedOpen) {
      const at = parkedIndex(parkedOpen.id);
      if (at < 0) closeParked(false);
      else parkedOpen.index = at;
    }
  }
  parked.complete = true;
  parked.at = started;
  parked.took = performance.now() - started;
  showParked(!fresh);
}

function showParked(top) {
  const n = parked.store.count;
  const counter = $('parked-count');
  counter.dataset.value = parked.complete ? String(n) : '';
  counter.textContent = `(${count(n)}${parked.complete ? '' : ' so far'})`;
  $('parked-empty').hidden = !(parked.complete && n === 0);
  $('parked-list').hidden = n === 0;
  $('parked-replay-all').disabled = n === 0;
  grids.parked.show(n, top);
}

// Parked event index: { payload, raw } (raw: the payload's text as
// received), or null while its bytes load.
function parkedEntry(index) {
  const text = parked.store.text(index);
  if (text === null) return null;
  const raw = text.startsWith(PARKED_PREFIX) && text.endsWith('}')
    ? text.slice(PARKED_PREFIX.length, -1)
    : JSON.stringify(parseLine(text).payload);
  return { payload: JSON.parse(raw), raw };
}

// The index of the parked event id (the list is in id order), or -1 when
// it is not listed or its bytes are not in memory.
function parkedIndex(id) {
  const before = (a, b) => a.length < b.length || (a.length === b.length && a < b);
  let lo = 0;
  let hi = parked.store.count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const entry = parkedEntry(mid);
    if (!entry) return -1;
    const at = String(entry.payload.event.id);
    if (at === id) return mid;
    if (before(at, id)) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

// A store of parked event lines; one whose lines cannot be read back says so.
function newParkedStore() {
  return new LineStore(() => grids.parked.list.refresh(), (error, first, last) => {
    showError($('parked-error'), `Parked events ${count(first + 1)}–${count(last + 1)} cannot be shown: the browser could not read them back from its storage (${describe(error)}).`);
  });
}

function parkedCells(index) {
  const entry = parkedEntry(index);
  if (!entry && parked.store.failure(index)) return [{ text: 'Cannot be shown' }, ...Array(6).fill({ text: '' })];
  if (!entry) return null;
  const p = entry.payload;
  return [
    { text: String(p.event.id) },
    { text: String(p.partition) },
    { text: String(p.attempts) },
    { text: formatTime(p.parkedAt), title: p.parkedAt },
    { text: p.reason === null ? '—' : p.reason, title: p.reason || '' },
    { text: String(p.event.subject) },
    { text: String(p.event.type) },
  ];
}

function decorateParked(index, row) {
  const entry = parkedEntry(index);
  const id = entry ? String(entry.payload.event.id) : '';
  row.dataset.id = id;
  row.setAttribute('aria-selected', String(Boolean(parkedOpen && parkedOpen.id === id)));
}

// Shows why the parked event index was parked: reason, attempts, when,
// and the event as stored; byKey moves the focus into the panel.
function openParked(index, byKey) {
  const entry = parkedEntry(index);
  if (!entry) return;
  const p = entry.payload;
  parkedOpen = { id: String(p.event.id), partition: p.partition, index };
  const attempts = plural(p.attempts, 'attempt', 'attempts');
  const max = detail ? detail.options.maxDeliveries : null;
  let reason = p.reason;
  if (reason === null) {
    reason = max !== null && p.attempts >= max
      ? `none given: its ${attempts} (maxDeliveries) were not acknowledged in time`
      : 'none given';
  }
  $('parked-detail-id').textContent = parkedOpen.id;
  $('parked-why').replaceChildren(...[
    ['Reason', reason],
    ['Attempts', p.attempts === 1 ? '1 (parked by its first delivery)' : count(p.attempts)],
    ['Parked at', formatTime(p.parkedAt)],
    ['Partition', String(p.partition)],
    ['Subject', String(p.event.subject)],
    ['Type', String(p.event.type)],
  ].flatMap(([key, value]) => [el('dt', { text: key }), el('dd', { class: 'mono', text: value, 'data-key': key })]));
  const pairs = members(entry.raw) || [];
  const event = pairs.find(([key]) => key === 'event');
  $('parked-event').textContent = pretty(event ? event[1] : entry.raw);
  $('parked-replay').textContent = `Replay event ${parkedOpen.id}`;
  $('parked-detail').hidden = false;
  grids.parked.list.refresh();
  if (byKey) $('parked-detail').focus();
}

// Hides the parked event's panel; the focus, if asked for or if it was in
// the panel, goes to the event's row (or the heading when none is left).
function closeParked(returnFocus) {
  const open = parkedOpen;
  const hadFocus = $('parked-detail').contains(document.activeElement);
  parkedOpen = null;
  $('parked-detail').hidden = true;
  if (!grids) return;
  grids.parked.list.refresh();
  if (!returnFocus && !hadFocus) return;
  if (open && parked.store.count) grids.parked.list.focusIndex(Math.min(open.index, parked.store.count - 1));
  else $('h-parked').focus();
}

// Replays the parked event open ({ id, partition }) or, with null, all.
async function replay(open) {
  const name = selected;
  const body = open ? { subscription: name, eventIds: [open.id] } : { subscription: name };
  if (acting) return;
  acting = true;
  const focused = [$('parked-replay'), $('parked-replay-all')].includes(document.activeElement);
  showError($('parked-error'), '');
  showError($('parked-status'), '');
  try {
    const { replayed } = await postJSON(`${API}replay-parked-events`, body);
    if (name !== selected) return;
    let text;
    if (open) {
      text = replayed === 1
        ? `Event ${open.id} replayed: it is delivered once more (attempt 1) to the owner of partition ${open.partition}.`
        : `Event ${open.id} was not replayed: it is no longer parked, or a reset delivers it anyway.`;
    } else {
      text = `${plural(replayed, 'parked event', 'parked events')} replayed: delivered once more (attempt 1) to their partitions' owners.`;
    }
    showError($('parked-status'), text);
    closeParked(false);
    if (focused) $('h-parked').focus();
    loadParked(true);
    loadDetail(true);
  } catch (error) {
    if (notAvailable(error)) return;
    showError($('parked-error'), `Could not replay: ${errorMessage(error)}`);
  } finally {
    acting = false;
  }
}

// --- Reset and delete, each behind a dialog -----------------------------

function askReset() {
  if (!selected) return;
  showError($('subscription-error'), '');
  showError($('subscription-status'), '');
  const choice = $('reset-start').value;
  let start = choice;
  let label = choice === 'end' ? 'the end' : 'the beginning';
  let effect = choice === 'end'
    ? 'the head when you confirm; only events written from then on are delivered.'
    : 'every matching event of the log is delivered again.';
  if (choice === 'after') {
    const id = $('reset-after').value.trim();
    if (!ID.test(id)) {
      showError($('subscription-error'), 'Enter the event id to reset to: a whole number such as 41.');
      $('reset-after').focus();
      return;
    }
    start = { afterEventId: id };
    label = `after event ${id}`;
    effect = `the matching events after event ${id} are delivered again.`;
  }
  pending = { name: selected, start, label };
  $('reset-dialog-name').textContent = selected;
  $('reset-dialog-start').textContent = label;
  $('reset-dialog-effect').textContent = effect;
  $('reset-confirm').textContent = `Reset ${selected}`;
  $('reset-dialog').returnValue = '';
  $('reset-dialog').showModal();
}

async function reset({ name, start, label }) {
  if (acting) return;
  acting = true;
  try {
    const info = await postJSON(`${API}reset-subscription`, { subscription: name, start });
    if (name !== selected) return;
    showError($('subscription-status'), `${name} was reset to ${label}: every partition's position moved there and its epoch went up by one.`);
    showDetail(info);
    loadList(true);
  } catch (error) {
    if (notAvailable(error)) return;
    if (name === selected) showError($('subscription-error'), `Could not reset ${name}: ${errorMessage(error)}`);
  } finally {
    acting = false;
  }
}

function askDelete() {
  if (!selected) return;
  showError($('subscription-error'), '');
  showError($('subscription-status'), '');
  const n = detail ? detail.parked : 0;
  pending = { name: selected };
  $('delete-dialog-name').textContent = selected;
  $('delete-dialog-parked').textContent = `its ${plural(n, 'parked event', 'parked events')}`;
  $('delete-confirm').textContent = `Delete ${selected}`;
  $('delete-dialog').returnValue = '';
  $('delete-dialog').showModal();
}

async function remove({ name }) {
  if (acting) return;
  acting = true;
  try {
    await postJSON(`${API}delete-subscription`, { subscription: name });
    if (name === selected) unselect();
    showError($('subscriptions-error'), '');
    showError($('subscriptions-done'), `The subscription ${name} was deleted.`);
    $('h-subscriptions').focus();
    loadList(true);
  } catch (error) {
    if (notAvailable(error)) return;
    if (error instanceof ApiError && error.status === 404) {
      gone(name);
      return;
    }
    if (name === selected) showError($('subscription-error'), `Could not delete ${name}: ${errorMessage(error)}`);
  } finally {
    acting = false;
  }
}

// --- Lag over time --------------------------------------------------------

// Keeps the lag of every subscription from each of the sampler's polls
// (null: the poll failed), over the sampler's window.
function sampleLag(samples) {
  const at = performance.now();
  if (sampler.points.length <= 1) {
    // The sampler started afresh (signed in again): so do the series.
    lagTimes.length = 0;
    lagTotal.length = 0;
    lagSeries.clear();
  }
  while (lagTimes.length && lagTimes[0] < at - sampler.WINDOW_MS) {
    lagTimes.shift();
    lagTotal.shift();
    for (const values of lagSeries.values()) values.shift();
  }
  const seen = new Map();
  if (samples) for (const s of samples) if (FIGURES[s.name] === 'lag') seen.set(s.labels.subscription, s.value);
  for (const [name, values] of lagSeries) {
    if (seen.has(name)) continue;
    values.push(null);
    if (values.every((v) => v === null)) lagSeries.delete(name);
  }
  let total = 0;
  for (const [name, value] of seen) {
    if (!lagSeries.has(name)) lagSeries.set(name, new Array(lagTimes.length).fill(null));
    lagSeries.get(name).push(value);
    total += value;
  }
  lagTimes.push(at);
  lagTotal.push(samples ? total : null);
  if (!active) return;
  drawCharts();
  if (samples && !unavailable && $('view-subscriptions').dataset.state === 'ready') applyFigures(samples);
}

// Sets the list's figures to those of the metrics; reads the list again
// (no sooner than LIST_AGAIN_MS after the last read) when the metrics name
// other subscriptions or other numbers of consumers.
function applyFigures(samples) {
  const figures = new Map();
  for (const s of samples) {
    const key = FIGURES[s.name];
    const name = s.labels.subscription;
    if (!key || name === undefined) continue;
    if (!figures.has(name)) figures.set(name, {});
    figures.get(name)[key] = s.value;
  }
  let differ = figures.size !== subscriptions.length;
  for (const s of subscriptions) {
    const f = figures.get(s.subscription);
    if (!f) {
      differ = true;
      continue;
    }
    Object.assign(s, f);
    if (f.consumerCount !== undefined && f.consumerCount !== s.consumers.length) differ = true;
  }
  grids.list.list.refresh();
  if (differ && performance.now() - listedAt >= LIST_AGAIN_MS) loadList();
}

function drawCharts() {
  if (!charts) return;
  const now = performance.now();
  const gap = 2.5 * sampler.INTERVAL_MS;
  const series = (values) => lagTimes.map((at, i) => ({ at, value: values[i] === undefined ? null : values[i] }));
  charts.total.draw(series(lagTotal), now, sampler.WINDOW_MS, gap);
  const figure = $('chart-subscription-lag');
  if (selected) {
    charts.one.draw(series(lagSeries.get(selected) || []), now, sampler.WINDOW_MS, gap);
  } else {
    charts.one.draw([], now, sampler.WINDOW_MS, gap);
    figure.querySelector('.chart-summary').textContent = 'Select a subscription to see its lag.';
  }
}
