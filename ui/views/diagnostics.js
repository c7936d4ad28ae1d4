// Diagnostics: GET /api/v1/diagnostics shown as sections of keys and values
// (nested keys joined with dots), every value as the server wrote it (a
// memory limit of 2^62 bytes or more, Go's "no limit", as "none"; a list of
// objects such as the storage engine's levels as a table), and "Copy as
// JSON" copying the server's text unchanged.
import { getText, isAbort, Latest } from '../api.js';
import { $, el, showError, errorMessage, formatBytes, formatDuration } from '../dom.js';
import { members, displayText } from '../rawjson.js';

const PATH = '/api/v1/diagnostics';
const ORDER = ['version', 'system', 'process', 'options', 'storage']; // others follow in the server's order
const requests = new Latest();
let text = '';

export function init() {
  $('diagnostics-refresh').addEventListener('click', () => {
    load();
  });
  $('diagnostics-copy').addEventListener('click', () => {
    copy();
  });
}

export function stop() {
  requests.stop();
}

export async function load() {
  const own = requests.start();
  showError($('diagnostics-error'), '');
  $('diagnostics-status').hidden = true;
  $('diagnostics').setAttribute('aria-busy', 'true');
  try {
    const body = await getText(PATH, { signal: own.signal });
    if (!requests.owns(own)) return;
    text = body;
    render();
  } catch (error) {
    if (isAbort(error) || !requests.owns(own)) return;
    showError($('diagnostics-error'), `Could not read the diagnostics: ${errorMessage(error)}`);
  } finally {
    if (requests.owns(own)) $('diagnostics').setAttribute('aria-busy', 'false');
    requests.finish(own);
  }
  $('diagnostics-copy').disabled = !text;
}

function render() {
  const rank = (name) => (ORDER.includes(name) ? ORDER.indexOf(name) : ORDER.length);
  const ordered = (members(text) || []).sort(([a], [b]) => rank(a) - rank(b));
  const sections = ordered.map(([name, raw]) => el('section', { class: 'kv-section' },
    el('h4', { text: title(name) }),
    el('dl', { class: 'kv' }, ...flatten(raw).flatMap(([key, value]) => [
      el('dt', { class: 'mono', text: key }),
      entry(key, value),
    ]))));
  $('diagnostics-report').replaceChildren(...sections);
}

// The value of key: a list of objects as a table, no list as "none",
// anything else as text.
function entry(key, raw) {
  const rows = objects(raw);
  if (rows && rows.length) {
    const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    return el('dd', { class: 'mono kv-rows' }, el('table', { class: 'kv-table' },
      el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', text: c })))),
      el('tbody', {}, ...rows.map((row) => el('tr', {}, ...columns.map((c) => el('td', {
        text: Object.prototype.hasOwnProperty.call(row, c) ? shown(c, JSON.stringify(row[c])) : '',
      })))))));
  }
  if ((rows && !rows.length) || (raw === 'null' && /levels$/i.test(key))) return el('dd', { class: 'mono', text: 'none' });
  const unlimited = noLimit(key, raw);
  return el('dd', { class: 'mono', text: unlimited ? 'none' : shown(key, raw), title: unlimited && raw !== 'null' ? `${raw}: no limit` : undefined });
}

// The members of a JSON array of objects, or null for any other value.
function objects(raw) {
  if (!raw.startsWith('[')) return null;
  try {
    const list = JSON.parse(raw);
    return list.every((item) => item && typeof item === 'object' && !Array.isArray(item)) ? list : null;
  } catch {
    return null;
  }
}

// Whether raw is a limit that limits nothing: Go reports "no memory limit"
// as the largest int64 (any limit of 2^62 or more is none in practice),
// and a limit that is not set (no cgroup limit) is null.
function noLimit(key, raw) {
  if (!/limit/i.test(key)) return false;
  if (raw === 'null') return true;
  return /^\d+$/.test(raw) && BigInt(raw) >= 2n ** 62n;
}

function title(name) {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

// The leaves of a raw JSON value as [dotted key, raw value]; an empty
// object or an array is one leaf.
function flatten(raw, prefix = '', out = []) {
  const inner = members(raw);
  if (!inner || !inner.length) {
    out.push([prefix || '(value)', raw]);
    return out;
  }
  for (const [key, value] of inner) flatten(value, prefix ? `${prefix}.${key}` : key, out);
  return out;
}

// A value as stored (an empty string as ""), with bytes and seconds also
// in readable units.
function shown(key, raw) {
  if (raw === '""') return raw;
  const value = displayText(raw);
  const n = Number(raw);
  if (!/^-?\d/.test(raw) || !Number.isSafeInteger(Math.trunc(n))) return value;
  if (/bytes$/i.test(key) && n >= 1024) return `${value} (${formatBytes(n)})`;
  if (/seconds$/i.test(key) && n >= 60) return `${value} (${formatDuration(n)})`;
  return value;
}

async function copy() {
  const status = $('diagnostics-status');
  try {
    if (navigator.clipboard && window.isSecureContext) await navigator.clipboard.writeText(text);
    else copyBySelection();
    status.textContent = `Copied the diagnostics as JSON (${text.length.toLocaleString('en-US')} characters).`;
    status.hidden = false;
    showError($('diagnostics-error'), '');
  } catch (error) {
    status.hidden = true;
    showError($('diagnostics-error'), `Could not copy: ${errorMessage(error)}`);
  }
}

// Without the Clipboard API (plain HTTP to another host is no secure
// context): copy a selected hidden text area, the way browsers always have.
function copyBySelection() {
  const area = el('textarea', { class: 'sr-only', readOnly: true, value: text, 'aria-hidden': 'true', tabindex: -1 });
  const focused = document.activeElement;
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (focused) focused.focus();
  if (!ok) throw new Error('the browser refused to copy; select the values and copy them by hand.');
}
