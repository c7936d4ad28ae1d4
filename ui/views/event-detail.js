// The event detail panel: pretty JSON (re-indented, every token as stored)
// and the raw JSON, both wrapped, and the hash recomputed in the browser.
// Opening it keeps the row in view and moves focus into the panel; Close
// or Escape hides it and returns focus to the row.
import { $, errorMessage } from '../dom.js';
import { verifyHash } from '../hash.js';
import { pretty } from '../rawjson.js';

let token = 0;
let row = null;

export function init() {
  $('event-close').addEventListener('click', () => closeDetail(true));
  $('view-events').addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !$('event-detail').hidden) {
      event.preventDefault();
      closeDetail(true);
    }
  });
}

/** Shows entry ({ event, raw }) of the table row tr. */
export function openDetail(tr, { event, raw }) {
  if (row) row.classList.remove('selected');
  row = tr;
  row.classList.add('selected');
  const mine = ++token;
  $('event-detail-id').textContent = String(event.id);
  $('event-pretty').textContent = pretty(raw);
  $('event-raw').textContent = raw;
  const badge = $('event-verified');
  badge.dataset.state = 'pending';
  badge.textContent = 'Verifying…';
  $('event-detail').hidden = false;
  $('events-layout').classList.add('has-detail');
  $('event-detail').scrollTop = 0;
  row.scrollIntoView({ block: 'nearest' });
  $('event-detail').focus({ preventScroll: true });
  const erased = event.data && event.data.$erased;
  if (erased) {
    // The hash covers the original data, which is gone (docs/api.md §4.16).
    badge.dataset.state = 'erased';
    badge.textContent = `Erased at ${erased.at} by event ${erased.by}; the hash covers the original data`;
    return;
  }
  verifyHash(event, raw)
    .then((ok) => {
      if (mine !== token) return;
      badge.dataset.state = ok ? 'verified' : 'mismatch';
      badge.textContent = ok ? 'Hash verified' : 'Hash mismatch';
    })
    .catch((error) => {
      if (mine !== token) return;
      badge.dataset.state = 'error';
      badge.textContent = `Could not verify: ${errorMessage(error)}`;
    });
}

/** Hides the panel; with returnFocus, focus goes back to the row. */
export function closeDetail(returnFocus = false) {
  token += 1;
  $('event-detail').hidden = true;
  $('events-layout').classList.remove('has-detail');
  if (!row) return;
  row.classList.remove('selected');
  if (returnFocus && row.isConnected) {
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: 'nearest' });
  }
  row = null;
}
