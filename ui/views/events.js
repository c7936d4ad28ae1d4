// Events: a subject's events, 50 a page, with first, previous and next page
// and jumps to an id or a time; a row opens the detail panel. Pages are
// read with id bounds: a previous page is read in the opposite order.
import { streamNDJSON, isAbort, Latest } from '../api.js';
import * as access from '../access.js';
import { $, el, showError, errorMessage, formatTime, offer } from '../dom.js';
import { rowKeys, focusRow } from '../keys.js';
import * as detail from './event-detail.js';
import { normalizeTime, firstIdAtOrAfter } from './event-time.js';

const PAGE_SIZE = 50;
const ID = /^(0|[1-9][0-9]{0,18})$/;
const requests = new Latest();
let query = null; // { subject, recursive, order }
let page = []; // [{ event, raw }] in list order
let hasNext = false;
let hasPrevious = false;

export function init() {
  detail.init();
  $('events-form').addEventListener('submit', (event) => {
    event.preventDefault();
    loadFirst();
  });
  $('events-first').addEventListener('click', () => go((signal) => pageFrom(null, 'inclusive', false, signal)));
  $('events-next').addEventListener('click', () => go((signal) => pageFrom(last(), 'exclusive', true, signal)));
  $('events-previous').addEventListener('click', () => go(previousPage));
  $('events-goto-id').addEventListener('submit', (event) => {
    event.preventDefault();
    const text = $('events-id').value.trim();
    if (!ID.test(text)) showError($('events-error'), 'Enter an event id: a whole number such as 1200.');
    else go((signal) => jumpTo(text, `id ${text}`, signal));
  });
  $('events-goto-time').addEventListener('submit', (event) => {
    event.preventDefault();
    let time;
    try {
      time = normalizeTime($('events-time').value);
    } catch (error) {
      showError($('events-error'), errorMessage(error));
      return;
    }
    go(async (signal) => {
      const id = await firstIdAtOrAfter(time, signal);
      return id === null ? `No event at or after ${time}.` : jumpTo(String(id), time, signal);
    });
  });
  $('events-order').addEventListener('change', () => {
    if (!query) updatePager();
  });
  const tbody = $('events-table').tBodies[0];
  tbody.addEventListener('click', (event) => {
    const row = event.target.closest('tr[data-id]');
    if (row) openRow(row);
  });
  rowKeys(tbody, 'tr[data-id]', openRow);
  updatePager();
}

export function enter(params) {
  offer($('events-goto-time'), access.mayRead('/'),
    'Going to a time reads single events anywhere in the store: it needs the “read” grant of /.');
  const subject = params.get('subject');
  if (subject) {
    $('events-subject').value = subject;
    loadFirst();
  } else if (!query) {
    $('events-subject').value = access.startSubject($('events-subject').value.trim() || '/');
    loadFirst();
  }
}

export function leave() {
  requests.stop();
}

function loadFirst() {
  const subject = $('events-subject').value.trim() || '/';
  query = { subject, recursive: $('events-recursive').checked, order: $('events-order').value };
  go((signal) => pageFrom(null, 'inclusive', false, signal));
}

const first = () => page[0].event.id;
const last = () => page[page.length - 1].event.id;

/**
 * Runs step(signal) as the view's one request; step resolves to a page
 * ({ entries, hasNext, hasPrevious }) to show, or to a message.
 */
async function go(step) {
  if (!query) return;
  const own = requests.start();
  showError($('events-error'), '');
  $('events-info').textContent = 'Loading…';
  try {
    const outcome = await step(own.signal);
    if (!requests.owns(own)) return;
    if (typeof outcome === 'string') {
      showError($('events-error'), outcome);
      updateInfo();
    } else {
      ({ entries: page, hasNext, hasPrevious } = outcome);
      render();
    }
  } catch (error) {
    if (isAbort(error) || !requests.owns(own)) return;
    showError($('events-error'), `Could not read events: ${errorMessage(error)}`);
    updateInfo();
  } finally {
    requests.finish(own);
  }
}

const REVERSED = { chronological: 'antichronological', antichronological: 'chronological' };

/**
 * Reads up to limit events of the subject in order, from bound id (null:
 * from the start).
 */
async function read(order, id, type, limit, signal) {
  const chronological = order === 'chronological';
  const options = { recursive: query.recursive, order };
  if (id !== null) options[chronological ? 'lowerBound' : 'upperBound'] = { id: String(id), type };
  const entries = [];
  for await (const item of streamNDJSON('/api/v1/read-events', { subject: query.subject, options }, { signal })) {
    if (item.type !== 'event') continue;
    entries.push({ event: item.payload, raw: item.raw });
    if (entries.length === limit) break; // ends the stream
  }
  return entries;
}

/** The page starting at id (null: the first page); previous tells whether events come before it, if known. */
async function pageFrom(id, type, previous, signal) {
  const entries = await read(query.order, id, type, PAGE_SIZE + 1, signal);
  let before = previous;
  if (before === undefined) {
    before = entries.length > 0 && (await read(REVERSED[query.order], entries[0].event.id, 'exclusive', 1, signal)).length > 0;
  }
  return { entries: entries.slice(0, PAGE_SIZE), hasNext: entries.length > PAGE_SIZE, hasPrevious: before };
}

async function previousPage(signal) {
  const entries = await read(REVERSED[query.order], first(), 'exclusive', PAGE_SIZE + 1, signal);
  if (entries.length <= PAGE_SIZE) return pageFrom(null, 'inclusive', false, signal); // back at the start
  return { entries: entries.slice(0, PAGE_SIZE).reverse(), hasNext: true, hasPrevious: true };
}

// The page that starts at the subject's first event at or after global id
// (in either order, the first row is that event).
async function jumpTo(id, what, signal) {
  const found = await read('chronological', id, 'inclusive', 1, signal);
  if (!found.length) return `No event of ${query.subject} at or after ${what}.`;
  return pageFrom(found[0].event.id, 'inclusive', undefined, signal);
}

function openRow(row) {
  const entry = page.find((e) => String(e.event.id) === row.dataset.id);
  if (entry) detail.openDetail(row, entry);
}

function render() {
  detail.closeDetail();
  const rows = page.map(({ event }) => el('tr', { 'data-id': event.id, tabindex: -1 },
    el('td', { class: 'num nowrap', text: event.id, 'data-label': 'Id' }),
    el('td', { class: 'nowrap time', text: formatTime(event.time), title: event.time, 'data-label': 'Time' }),
    el('td', { class: 'subject', text: event.subject, title: event.subject, 'data-label': 'Subject' }),
    el('td', { class: 'type', text: event.type, title: event.type, 'data-label': 'Type' })));
  if (!rows.length) rows.push(el('tr', {}, el('td', { colSpan: 4, class: 'muted', text: 'No events.' })));
  $('events-table').tBodies[0].replaceChildren(...rows);
  focusRow(rows, -1, page.length ? rows[0] : null);
  updateInfo();
}

// The paging words of an order: the first page holds the oldest events in
// chronological order, the newest ones newest first.
const WORDS = {
  chronological: { first: 'First page', previous: 'Previous page', next: 'Next page', start: 'from the start', end: 'to the end' },
  antichronological: { first: 'Newest page', previous: 'Newer page', next: 'Older page', start: 'from the newest', end: 'to the oldest' },
};

function words() {
  return WORDS[query ? query.order : $('events-order').value] || WORDS.chronological;
}

function updateInfo() {
  const w = words();
  $('events-info').textContent = page.length
    ? `Ids ${first()} – ${last()} (${page.length} events${hasPrevious ? '' : `, ${w.start}`}${hasNext ? '' : `, ${w.end}`})`
    : 'No events';
  updatePager();
}

function updatePager() {
  const w = words();
  $('events-first').textContent = w.first;
  $('events-previous').textContent = w.previous;
  $('events-next').textContent = w.next;
  $('events-next').disabled = !hasNext;
  $('events-previous').disabled = !hasPrevious;
  $('events-first').disabled = !query || !hasPrevious;
}
