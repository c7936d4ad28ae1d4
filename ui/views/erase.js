// Erase personal data (docs/api.md §4.16): a subject, whether its
// descendants too, and a reason; a dialog asks to type the subject again
// before anything is erased, and the answer says how many events were
// erased and which event records it. Only a token with the admin grant
// may erase.
import { postJSON } from '../api.js';
import * as access from '../access.js';
import { $, offer, showError, errorMessage } from '../dom.js';

let generation = 0;

export function init() {
  $('erase-open').addEventListener('click', openDialog);
  $('erase-confirm-subject').addEventListener('input', () => {
    $('erase-confirm').disabled = $('erase-confirm-subject').value !== $('erase-subject').value.trim();
  });
  $('erase-dialog').addEventListener('close', () => {
    if ($('erase-dialog').returnValue === 'confirm') erase();
  });
}

export function enter() {
  generation += 1;
  offer($('erase'), access.has('admin'), 'Erasing needs a token with the admin grant.');
}

export function leave() {
  generation += 1;
  if ($('erase-dialog').open) $('erase-dialog').close();
}

function openDialog() {
  showError($('erase-error'), '');
  $('erase-status').hidden = true;
  const subject = $('erase-subject').value.trim();
  if (!subject.startsWith('/')) {
    showError($('erase-error'), 'Enter the subject to erase, starting with /.');
    $('erase-subject').focus();
    return;
  }
  if (!$('erase-reason').value.trim()) {
    showError($('erase-error'), 'Enter the reason for the erasure: it is recorded with it.');
    $('erase-reason').focus();
    return;
  }
  $('erase-dialog-subject').textContent = $('erase-recursive').checked ? `${subject} and the subjects below it` : subject;
  $('erase-confirm-subject').value = '';
  $('erase-confirm').disabled = true;
  $('erase-dialog').returnValue = '';
  $('erase-dialog').showModal();
  $('erase-confirm-subject').focus();
}

async function erase() {
  const gen = generation;
  const subject = $('erase-subject').value.trim();
  const card = $('erase');
  card.dataset.state = 'running';
  $('erase-open').disabled = true;
  try {
    const answer = await postJSON('/api/v1/erase-events', {
      subject, recursive: $('erase-recursive').checked, reason: $('erase-reason').value.trim(),
    });
    if (gen !== generation) return;
    card.dataset.state = 'done';
    card.dataset.erased = String(answer.erased);
    $('erase-status').textContent = answer.event
      ? `Erased ${answer.erased} events of ${subject}; event ${answer.event.id} records the erasure.`
      : `Nothing erased: no event of ${subject} that was not erased before.`;
    $('erase-status').hidden = false;
  } catch (error) {
    if (gen !== generation) return;
    card.dataset.state = 'failed';
    showError($('erase-error'), `Could not erase: ${errorMessage(error)}`);
  } finally {
    if (gen === generation) $('erase-open').disabled = false;
  }
}
