// Jumping to a time. Event times grow strictly with ids across the whole
// store (docs/api.md §2.4), so the first event at or after a time is found by a
// binary search over ids, each step reading the one event with that id
// (read-events with both bounds on it): about log2(events) tiny reads,
// whatever the store's size. An EventQL query (WHERE e.time >= t TOP 1)
// would instead scan every event before t.
import { request, streamNDJSON } from '../api.js';

const TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * Normalizes a time typed by the user (a date, or a date and time with
 * optional seconds, fraction and zone; no zone means UTC) to the events'
 * form, 2026-11-22T10:15:30.123456789Z, in which times compare as text.
 * Throws on anything else.
 */
export function normalizeTime(text) {
  const m = TIME.exec(text.trim());
  if (!m) throw new Error('Enter a time like 2026-11-22T10:15:30Z (UTC unless a zone is given).');
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', zone = 'Z'] = m;
  if (+mo < 1 || +mo > 12 || +d < 1 || +d > 31 || +h > 23 || +mi > 59 || +s > 59) throw new Error(`"${text}" is not a valid time.`);
  let offset = 0;
  if (zone.toUpperCase() !== 'Z') {
    const digits = zone.replace(':', '');
    offset = (zone[0] === '-' ? -1 : 1) * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5)));
  }
  const ms = Date.UTC(+y, +mo - 1, +d, +h, +mi - offset, +s);
  if (Number.isNaN(ms)) throw new Error(`"${text}" is not a valid time.`);
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction.padEnd(9, '0')}Z`;
}

async function eventCount(signal) {
  const health = await request('/api/v1/health', { okStatuses: [503], signal }).then((r) => r.json());
  const check = health.checks && health.checks['storage:events'] && health.checks['storage:events'][0];
  return check ? Number(check.observedValue) : 0;
}

async function timeOf(id, signal) {
  const bound = { id: String(id), type: 'inclusive' };
  const body = { subject: '/', options: { recursive: true, lowerBound: bound, upperBound: bound } };
  for await (const item of streamNDJSON('/api/v1/read-events', body, { signal })) {
    if (item.type === 'event') return item.payload.time;
  }
  throw new Error(`Event ${id} could not be read.`);
}

/** The id of the first event of the store at or after time (normalized), or null. */
export async function firstIdAtOrAfter(time, signal) {
  const count = await eventCount(signal);
  if (count === 0) return null;
  let lo = 0;
  let hi = count - 1;
  if ((await timeOf(hi, signal)) < time) return null;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if ((await timeOf(mid, signal)) >= time) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
