// Samples the service's metrics every 2 s while the console is signed in
// (whatever view is shown) and keeps the last 15 minutes of points in this
// tab's memory; a reload starts afresh. A point holds the write rate and
// the events read per second since the previous sample, the observers, and
// the write latency p99 over the preceding minute (from the increments of
// the histogram's buckets). Listeners get the parsed samples of each poll
// (null when it failed).
import { getText } from './api.js';
import { parseMetrics, findMetric, sumMetric, buckets, quantile } from './metrics.js';

const PATH = '/api/v1/health?format=openmetrics';
const LATENCY = 'eventstore_write_duration_seconds';
export const INTERVAL_MS = 2000;
export const WINDOW_MS = 15 * 60 * 1000;
const P99_MS = 60 * 1000;

/** Points of the window, oldest first: { at, writeRate, readRate, observers, p99 }, null where unknown. */
export const points = [];
const listeners = new Set();
let generation = 0;
let running = false;
let timer = 0;
let previous = null; // { at, written, read } of the last sample
let history = []; // { at, buckets } of the last minute's samples
let latest = null;

export function start() {
  if (running) return;
  running = true;
  generation += 1;
  poll(generation);
}

/** Stops sampling and forgets every point. */
export function stop() {
  running = false;
  generation += 1;
  clearTimeout(timer);
  points.length = 0;
  previous = null;
  history = [];
  latest = null;
}

/** Calls fn(samples) after each poll; returns the function that unsubscribes. */
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The samples of the last poll (null before the first or when it failed). */
export function latestSamples() {
  return latest;
}

async function poll(gen) {
  let samples = null;
  try {
    samples = parseMetrics(await getText(PATH));
  } catch {
    // a gap in the series; the next poll tries again
  }
  if (gen !== generation) return;
  record(samples, performance.now());
  latest = samples;
  for (const fn of listeners) fn(samples);
  timer = setTimeout(() => poll(gen), INTERVAL_MS);
}

function record(samples, at) {
  while (points.length && points[0].at < at - WINDOW_MS) points.shift();
  if (!samples) {
    previous = null;
    return;
  }
  const written = findMetric(samples, 'eventstore_events_written_total');
  const now = {
    at,
    written: written ? written.value : 0,
    read: sumMetric(samples, 'eventstore_events_read_total'),
  };
  const point = { at, writeRate: null, readRate: null, observers: null, p99: latencyP99(buckets(samples, LATENCY), at) };
  if (previous) {
    point.writeRate = rate(now.written, previous.written, (at - previous.at) / 1000);
    point.readRate = rate(now.read, previous.read, (at - previous.at) / 1000);
  }
  if (samples.some((s) => s.name === 'eventstore_observers')) point.observers = sumMetric(samples, 'eventstore_observers');
  previous = now;
  points.push(point);
}

// A counter's rate; null after a restart of the service (the counter fell).
function rate(value, before, seconds) {
  return seconds > 0 && value >= before ? (value - before) / seconds : null;
}

// The p99 of the writes since the newest sample at least a minute old (or
// the oldest one kept); null without writes or after a restart of the
// service (its buckets fell).
function latencyP99(current, at) {
  history.push({ at, buckets: current });
  while (history.length > 1 && history[1].at <= at - P99_MS) history.shift();
  const base = history[0].buckets;
  if (base.length !== current.length || base.some((b, i) => b.le !== current[i].le || b.count > current[i].count)) {
    history = [history[history.length - 1]];
    return null;
  }
  return quantile(0.99, current.map((b, i) => ({ le: b.le, count: b.count - base[i].count })));
}
