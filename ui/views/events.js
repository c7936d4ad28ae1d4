// Events: paged event list (50 per page) with a detail panel that shows the
// pretty and raw JSON and verifies the event's hash in the browser.
import { streamNDJSON, isAbort, Latest } from '../api.js';
import { $, el, showError, errorMessage, formatTime } from '../dom.js';
import { verifyHash } from '../hash.js';

const PAGE_SIZE = 50;
const requests = new Latest();
let query = null; // { subject, recursive, order }
let pageNumber = 1;
let lastId = null;
let hasMore = false;
let byId = new Map();
let detailToken = 0;

export function init() {
  $('events-form').addEventListener('submit', (event) => {
    event.preventDefault();
    loadFirst();
  });
  $('events-first').addEventListener('click', () => {
    if (query) loadPage(null, 1);
  });
  $('events-next').addEventListener('click', () => {
    if (query && hasMore && lastId !== null) loadPage(lastId, pageNumber + 1);
  });
  const tbody = $('events-table').tBodies[0];
  tbody.addEventListener('click', (event) => {
    const row = event.target.closest('tr[data-id]');
    if (row) openDetail(row);
  });
  tbody.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' && event.key !== ' ') return;
    const row = event.target.closest('tr[data-id]');
    if (!row) return;
    event.preventDefault();
    openDetail(row);
  });
  $('event-close').addEventListener('click', closeDetail);
  updatePager();
}

export function enter(params) {
  const subject = params.get('subject');
  if (subject) {
    $('events-subject').value = subject;
    loadFirst();
  } else if (!query) {
    loadFirst();
  }
}

export function leave() {
  requests.stop();
}

function loadFirst() {
  const subject = $('events-subject').value.trim() || '/';
  query = { subject, recursive: $('events-recursive').checked, order: $('events-order').value };
  closeDetail();
  loadPage(null, 1);
}

async function loadPage(afterId, number) {
  const own = requests.start();
  showError($('events-error'), '');
  $('events-info').textContent = 'Loading…';
  const options = { recursive: query.recursive, order: query.order };
  if (afterId !== null) {
    const bound = { id: afterId, type: 'exclusive' };
    if (query.order === 'antichronological') options.upperBound = bound;
    else options.lowerBound = bound;
  }
  const page = [];
  let more = false;
  try {
    for await (const item of streamNDJSON('/api/v1/read-events', { subject: query.subject, options }, { signal: own.signal })) {
      if (item.type !== 'event') continue;
      if (page.length === PAGE_SIZE) {
        more = true;
        break;
      }
      page.push({ event: item.payload, raw: item.raw });
    }
  } catch (error) {
    if (isAbort(error) && !requests.owns(own)) return;
    if (!isAbort(error)) {
      showError($('events-error'), `Could not read events: ${errorMessage(error)}`);
      requests.finish(own);
      $('events-info').textContent = '';
      return;
    }
  }
  if (!requests.owns(own)) return;
  own.abort(); // stop the rest of the stream once the page is full
  requests.finish(own);
  pageNumber = number;
  hasMore = more;
  lastId = page.length ? page[page.length - 1].event.id : null;
  render(page);
}

function render(page) {
  byId = new Map(page.map((entry) => [String(entry.event.id), entry]));
  const rows = page.map(({ event }) => el('tr', { 'data-id': event.id, tabindex: 0 },
    el('td', { class: 'num', text: event.id }),
    el('td', { class: 'nowrap', text: formatTime(event.time), title: event.time }),
    el('td', { text: event.subject }),
    el('td', { text: event.type })));
  if (!rows.length) {
    rows.push(el('tr', {}, el('td', { colSpan: 4, class: 'muted', text: 'No events.' })));
  }
  $('events-table').tBodies[0].replaceChildren(...rows);
  const first = page.length ? page[0].event.id : '';
  $('events-info').textContent = page.length
    ? `Page ${pageNumber}: ids ${first} – ${lastId} (${page.length} events)`
    : `Page ${pageNumber}: no events`;
  updatePager();
}

function updatePager() {
  $('events-next').disabled = !hasMore;
  $('events-first').disabled = !query || pageNumber <= 1;
}

function openDetail(row) {
  const entry = byId.get(row.dataset.id);
  if (!entry) return;
  for (const other of row.parentElement.querySelectorAll('tr.selected')) other.classList.remove('selected');
  row.classList.add('selected');
  const { event, raw } = entry;
  const token = ++detailToken;
  $('event-detail-id').textContent = String(event.id);
  $('event-pretty').textContent = JSON.stringify(event, null, 2);
  $('event-raw').textContent = raw;
  const badge = $('event-verified');
  badge.dataset.state = 'pending';
  badge.textContent = 'Verifying…';
  $('event-detail').hidden = false;
  $('event-detail').scrollIntoView({ block: 'nearest' });
  verifyHash(event, raw)
    .then((ok) => {
      if (token !== detailToken) return;
      badge.dataset.state = ok ? 'verified' : 'mismatch';
      badge.textContent = ok ? 'Hash verified' : 'Hash mismatch';
    })
    .catch((error) => {
      if (token !== detailToken) return;
      badge.dataset.state = 'error';
      badge.textContent = `Could not verify: ${errorMessage(error)}`;
    });
}

function closeDetail() {
  detailToken += 1;
  $('event-detail').hidden = true;
  for (const row of $('events-table').querySelectorAll('tr.selected')) row.classList.remove('selected');
}
