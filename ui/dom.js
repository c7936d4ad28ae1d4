// DOM helpers: everything is escaped via textContent.
export const $ = (id) => document.getElementById(id);

/** Creates an element with properties/attributes and children (text or nodes). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('data-') || key.startsWith('aria-') || key === 'role' || key === 'tabindex' || key === 'scope') node.setAttribute(key, String(value));
    else node[key] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** Shows message in an alert element (or hides it when empty). */
export function showError(node, message) {
  node.textContent = message || '';
  node.hidden = !message;
}

export function errorMessage(error) {
  return (error && error.message) || String(error);
}

/** Formats an event time compactly (keeps full precision in a title). */
export function formatTime(time) {
  return String(time || '').replace('T', ' ').replace('Z', '');
}

/** Formats a byte count with binary units (1.5 MiB). */
export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Formats seconds compactly: 42s, 3m 20s, 2h 5m 1s, 1d 4h 0m. */
export function formatDuration(seconds) {
  if (!Number.isFinite(seconds)) return '—';
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (d) return `${d}d ${h}h ${m}m`;
  if (h) return `${h}h ${m}m ${rest}s`;
  if (m) return `${m}m ${rest}s`;
  return `${rest}s`;
}

/**
 * Offers the controls inside container, or disables them and says why
 * (reason) in a note of its own, which assistive technology reads with
 * the controls.
 */
export function offer(container, allowed, reason) {
  let note = container.querySelector(':scope > .denied');
  if (!note) {
    note = el('p', { class: 'denied muted', id: `${container.id}-denied` });
    container.append(note);
  }
  note.textContent = allowed ? '' : reason;
  note.hidden = allowed;
  for (const control of container.querySelectorAll('input, textarea, select, button')) {
    control.disabled = !allowed;
    if (allowed) control.removeAttribute('aria-describedby');
    else control.setAttribute('aria-describedby', note.id);
  }
}

const TABBABLE = 'a[href], button, input, select, textarea, [tabindex]';

/** The elements of container that Tab stops at, in document order. */
export function tabStops(container) {
  return [...container.querySelectorAll(TABBABLE)].filter((node) => node.tabIndex >= 0 && !node.disabled
    && !node.closest('[hidden], [inert]') && node.getClientRects().length > 0);
}

function openModal() {
  try {
    return document.querySelector('dialog:modal');
  } catch {
    return document.querySelector('dialog[open]'); // a browser without :modal
  }
}

/**
 * Keeps the focus inside an open modal dialog: Tab after its last control
 * goes to its first, Shift+Tab before its first to its last. Escape
 * closes a dialog (the browser does); when it closes, the focus returns
 * to the control that had it before it opened, unless the dialog's own
 * code moved it elsewhere.
 */
export function keepFocusInDialogs() {
  let opener = null;
  document.addEventListener('focusin', (event) => {
    if (!event.target.closest || !event.target.closest('dialog')) opener = event.target;
  });
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Tab' || event.altKey || event.ctrlKey || event.metaKey) return;
    const dialog = openModal();
    if (!dialog) return;
    const stops = tabStops(dialog);
    const active = document.activeElement;
    if (!stops.length) {
      event.preventDefault();
      return;
    }
    const first = stops[0];
    const last = stops[stops.length - 1];
    if (!dialog.contains(active)) {
      event.preventDefault();
      (event.shiftKey ? last : first).focus();
    } else if (event.shiftKey && active === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && active === last) {
      event.preventDefault();
      first.focus();
    }
  });
  // close does not bubble: listen in the capture phase, before the
  // dialog's own listeners (which may move the focus on purpose).
  document.addEventListener('close', (event) => {
    const dialog = event.target;
    if (!(dialog instanceof HTMLDialogElement)) return;
    const active = document.activeElement;
    const lost = !active || active === document.body || dialog.contains(active);
    if (lost && opener && opener.isConnected && !opener.disabled) opener.focus();
  }, true);
}
