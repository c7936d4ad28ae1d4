// Dashboard: the health report, refreshed every 2 seconds while shown, and
// the metrics the sampler takes every 2 s while the console is signed in:
// figures, and charts of the last 15 minutes (write rate, events read,
// observers, write latency p99 over the preceding minute).
import { $, el, showError, errorMessage, formatBytes, formatDuration } from '../dom.js';
import { findMetric } from '../metrics.js';
import { getHealth, check, mode } from '../health.js';
import { Chart } from '../chart.js';
import * as sampler from '../sampler.js';

const REFRESH_MS = 2000;
const CHARTS = [
  { key: 'writeRate', id: 'chart-write-rate', format: (v) => `${formatRate(v)} events/s` },
  { key: 'readRate', id: 'chart-read-rate', format: (v) => `${formatRate(v)} events/s` },
  { key: 'observers', id: 'chart-observers', format: (v) => String(Math.round(v)) },
  { key: 'p99', id: 'chart-write-p99', format: formatLatency, unknown: 'no writes in the preceding minute' },
];
let timer = null;
let active = false;
let generation = 0;
let unsubscribe = null;
let shown = { health: false, metrics: false };
let charts = [];

export function init() {
  charts = CHARTS.map((c) => ({ key: c.key, chart: new Chart($(c.id), c.format, c.unknown) }));
}

export function enter() {
  active = true;
  generation += 1;
  shown = { health: false, metrics: false };
  unsubscribe = sampler.subscribe(renderMetrics);
  if (sampler.latestSamples()) renderMetrics(sampler.latestSamples());
  refresh(generation);
}

export function leave() {
  active = false;
  generation += 1;
  clearTimeout(timer);
  timer = null;
  if (unsubscribe) unsubscribe();
  unsubscribe = null;
}

function schedule(gen) {
  clearTimeout(timer);
  if (active && gen === generation) timer = setTimeout(() => refresh(gen), REFRESH_MS);
}

async function refresh(gen) {
  try {
    const health = await getHealth();
    if (!active || gen !== generation) return;
    renderHealth(health);
    showError($('dashboard-error'), '');
    $('dashboard-updated').textContent = new Date().toLocaleTimeString();
    loaded('health');
  } catch (error) {
    if (!active || gen !== generation) return;
    showError($('dashboard-error'), `Could not refresh: ${errorMessage(error)}`);
  }
  schedule(gen);
}

// The view counts as loaded once it shows both the health report and metrics.
function loaded(part) {
  shown[part] = true;
  if (shown.health && shown.metrics) $('view-dashboard').dataset.loaded = 'true';
}

// Sets a stat's text; with unit, the text is a figure followed by the unit
// in smaller type.
function setStat(name, text, value, state, unit = '') {
  const node = document.querySelector(`#view-dashboard [data-stat="${name}"]`);
  node.dataset.value = value === undefined || value === null ? '' : String(value);
  const shown = node.querySelector('.stat-value');
  if (unit) shown.replaceChildren(`${text} `, el('span', { class: 'stat-unit', text: unit }));
  else shown.textContent = text;
  if (state !== undefined) node.dataset.state = state;
}

function formatRate(rate) {
  return rate.toFixed(rate < 10 ? 2 : 0);
}

function formatLatency(seconds) {
  const ms = seconds * 1000;
  return `${ms.toFixed(ms < 10 ? 2 : 0)} ms`;
}

function renderHealth(health) {
  const status = String(health.status || 'unknown');
  setStat('status', status, status, status);

  const current = mode(health);
  setStat('mode', current || '—', current, current === 'read-only' ? 'warn' : '');

  const eventsCheck = check(health, 'storage:events');
  const count = eventsCheck ? Number(eventsCheck.observedValue) : NaN;
  setStat('events', Number.isFinite(count) ? count.toLocaleString() : '—', Number.isFinite(count) ? count : '');
  if (Number.isFinite(count) && count > 0) setStat('head', String(count - 1), count - 1);
  else setStat('head', '—', '');

  const sizeCheck = check(health, 'storage:size');
  const size = sizeCheck ? Number(sizeCheck.observedValue) : NaN;
  setStat('size', formatBytes(size), Number.isFinite(size) ? size : '');

  const uptimeCheck = check(health, 'uptime');
  const uptime = uptimeCheck ? Number(uptimeCheck.observedValue) : NaN;
  setStat('uptime', formatDuration(uptime), Number.isFinite(uptime) ? uptime : '');

  const build = sampler.latestSamples() && findMetric(sampler.latestSamples(), 'eventstore_build_info');
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

// The figures and charts of the sampler's last poll (samples null: it failed).
function renderMetrics(samples) {
  const last = samples ? sampler.points[sampler.points.length - 1] : null;
  const rate = last ? last.writeRate : null;
  if (rate === null) setStat('write-rate', '—', '');
  else setStat('write-rate', formatRate(rate), rate.toFixed(3), undefined, 'events/s');
  const observers = last ? last.observers : null;
  setStat('observers', observers === null ? '—' : String(observers), observers === null ? '' : observers);
  const now = performance.now();
  for (const { key, chart } of charts) {
    chart.draw(sampler.points.map((p) => ({ at: p.at, value: p[key] })), now, sampler.WINDOW_MS, 2.5 * sampler.INTERVAL_MS);
  }
  loaded('metrics');
}

function formatValue(entry) {
  const v = entry.observedValue;
  if (v === undefined) return entry.output || '';
  if (entry.observedUnit === 'bytes') return `${formatBytes(Number(v))} (${v} bytes)`;
  if (entry.observedUnit === 's') return formatDuration(Number(v));
  const text = typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(2) : String(v);
  return entry.observedUnit ? `${text} ${entry.observedUnit}` : text;
}
