// Operations: download a backup, enter read-only mode (behind a dialog
// that says it lasts until a restart), verify the store, erase personal
// data (behind a dialog that asks for the subject again), and the
// diagnostics report. Leaving the view cancels a verification; a backup,
// saved by the browser, goes on.
import { request } from '../api.js';
import { $, el, showError, errorMessage } from '../dom.js';
import { getHealth, mode } from '../health.js';
import * as backup from './backup.js';
import * as verify from './verify.js';
import * as diagnostics from './diagnostics.js';
import * as erase from './erase.js';

let generation = 0;

export function init() {
  backup.init();
  verify.init();
  erase.init();
  diagnostics.init();
  $('readonly-open').addEventListener('click', () => {
    showError($('mode-error'), '');
    $('readonly-dialog').returnValue = '';
    $('readonly-dialog').showModal();
  });
  $('readonly-dialog').addEventListener('close', () => {
    if ($('readonly-dialog').returnValue === 'confirm') enterReadOnly();
  });
}

export function enter() {
  generation += 1;
  $('mode-status').hidden = true;
  showMode(generation);
  erase.enter();
  diagnostics.load();
}

export function leave() {
  generation += 1;
  verify.cancel();
  erase.leave();
  diagnostics.stop();
  if ($('readonly-dialog').open) $('readonly-dialog').close();
}

async function showMode(gen) {
  try {
    const current = mode(await getHealth());
    if (gen !== generation) return;
    setMode(current);
  } catch (error) {
    if (gen !== generation) return;
    showError($('mode-error'), `Could not read the mode: ${errorMessage(error)}`);
  }
}

function setMode(current) {
  const value = $('mode-value');
  value.dataset.value = current;
  value.textContent = current || 'not reported by this server';
  const readOnly = current === 'read-only';
  disableButton(readOnly);
  $('readonly-open').textContent = readOnly ? 'Read-only mode is on' : 'Enter read-only mode…';
}

// A disabled button loses the focus: it goes to the section's heading.
function disableButton(disabled) {
  const button = $('readonly-open');
  if (disabled && document.activeElement === button) $('h-mode').focus();
  button.disabled = disabled;
}

async function enterReadOnly() {
  const gen = generation;
  disableButton(true);
  try {
    await request('/api/v1/put-into-read-only-mode', { method: 'POST' });
    if (gen !== generation) return;
    $('mode-status').replaceChildren('The service is now in read-only mode until it is restarted without ', el('code', { class: 'nowrap', text: '--read-only' }), '.');
    $('mode-status').hidden = false;
    await showMode(gen);
  } catch (error) {
    if (gen !== generation) return;
    showError($('mode-error'), `Could not enter read-only mode: ${errorMessage(error)}`);
    disableButton(false);
  }
}
