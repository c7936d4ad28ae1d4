// Dashboard: health report and metrics, refreshed every 2 seconds.
import { request, getText } from '../api.js';
import { $, el, showError, errorMessage, formatBytes, formatDuration } from '../dom.js';
import { parseMetrics, findMetric, sumMetric } from '../metrics.js';

const REFRESH_MS = 2000;
let timer = null;
let active = false;
let generation = 0;
let previousWritten = null; // { value, at }

export function init() {}

export function enter() {
  active = true;
  generation += 1;
  previousWritten = null;
  refresh(generation);
}

export function leave() {
  active = false;
  generation += 1;
  clearTimeout(timer);
  timer = null;
}

function schedule(gen) {
  clearTimeout(timer);
  if (active && gen === generation) timer = setTimeout(() => refresh(gen), REFRESH_MS);
}

async function refresh(gen) {
  try {
    const [health, metricsText] = await Promise.all([
      request('/api/v1/health', { okStatuses: [503] }).then((r) => r.json()),
      getText('/api/v1/health?format=openmetrics').catch(() => ''),
    ]);
    if (!active || gen !== generation) return;
    render(health, parseMetrics(metricsText));
    showError($('dashboard-error'), '');
    $('dashboard-updated').textContent = new Date().toLocaleTimeString();
    $('view-dashboard').dataset.loaded = 'true';
  } catch (error) {
    if (!active || gen !== generation) return;
    showError($('dashboard-error'), `Could not refresh: ${errorMessage(error)}`);
  }
  schedule(gen);
}

function check(health, name) {
  const entries = (health.checks && health.checks[name]) || [];
  return entries[0];
}

function setStat(name, text, value, state) {
  const node = document.querySelector(`#view-dashboard [data-stat="${name}"]`);
  node.dataset.value = value === undefined || value === null ? '' : String(value);
  node.querySelector('.stat-value').textContent = text;
  if (state !== undefined) node.dataset.state = state;
}

function render(health, samples) {
  const status = String(health.status || 'unknown');
  setStat('status', status, status, status);

  const eventsCheck = check(health, 'storage:events');
  const count = eventsCheck ? Number(eventsCheck.observedValue) : NaN;
  setStat('events', Number.isFinite(count) ? count.toLocaleString() : '—', Number.isFinite(count) ? count : '');
  if (Number.isFinite(count) && count > 0) setStat('head', String(count - 1), count - 1);
  else setStat('head', '—', '');

  const sizeCheck = check(health, 'storage:size');
  const size = sizeCheck ? Number(sizeCheck.observedValue) : NaN;
  setStat('size', formatBytes(size), Number.isFinite(size) ? size : '');

  const written = findMetric(samples, 'eventstore_events_written_total');
  const now = performance.now();
  if (written && previousWritten && now > previousWritten.at) {
    const rate = Math.max(0, (written.value - previousWritten.value) / ((now - previousWritten.at) / 1000));
    setStat('write-rate', `${rate.toFixed(rate < 10 ? 2 : 0)} events/s`, rate.toFixed(3));
  } else {
    setStat('write-rate', '—', '');
  }
  previousWritten = written ? { value: written.value, at: now } : null;

  const observers = samples.some((s) => s.name === 'eventstore_observers')
    ? sumMetric(samples, 'eventstore_observers') : null;
  setStat('observers', observers === null ? '—' : String(observers), observers === null ? '' : observers);

  const uptimeCheck = check(health, 'uptime');
  const uptime = uptimeCheck ? Number(uptimeCheck.observedValue) : NaN;
  setStat('uptime', formatDuration(uptime), Number.isFinite(uptime) ? uptime : '');

  const build = findMetric(samples, 'eventstore_build_info');
  const version = health.releaseId || (build && build.labels.version) || '—';
  setStat('version', version, version === '—' ? '' : version);

  const rows = Object.entries(health.checks || {})
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([name, entries]) => entries.map((entry) => el('tr', {},
      el('td', { text: name, 'data-label': 'Check' }),
      el('td', { 'data-label': 'Status' }, el('span', { class: `badge ${entry.status}`, text: entry.status || '' })),
      el('td', { text: formatValue(entry), 'data-label': 'Value' }))));
  $('checks').tBodies[0].replaceChildren(...rows);
}

function formatValue(entry) {
  const v = entry.observedValue;
  if (v === undefined) return entry.output || '';
  if (entry.observedUnit === 'bytes') return `${formatBytes(Number(v))} (${v} bytes)`;
  if (entry.observedUnit === 's') return formatDuration(Number(v));
  const text = typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(2) : String(v);
  return entry.observedUnit ? `${text} ${entry.observedUnit}` : text;
}
