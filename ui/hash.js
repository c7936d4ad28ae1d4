// Recomputes an event's hash in the browser with WebCrypto, exactly as the
// service does: sha256(hex(sha256(metadata)) + hex(sha256(dataBytes))).
const encoder = new TextEncoder();

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Returns the exact text of the "data" value inside the raw JSON of an
 * event: the substring between the first `"data":` (no key or string before
 * data can hold that text unescaped) and the last `,"hash":` (data may have
 * a "hash" key of its own; the event's hash follows data).
 */
export function rawData(rawEvent) {
  const startKey = '"data":';
  const endKey = ',"hash":';
  const start = rawEvent.indexOf(startKey);
  const end = rawEvent.lastIndexOf(endKey);
  if (start < 0 || end < start) throw new Error('The event has no data/hash fields.');
  return rawEvent.slice(start + startKey.length, end);
}

/** Computes the hash of an event given its parsed form and raw JSON text. */
export async function computeHash(event, rawEvent) {
  const metadata = [
    '1.0', event.id, event.predecessorhash, event.time, event.source,
    event.subject, event.type, 'application/json',
  ].join('|');
  const metadataHash = await sha256Hex(encoder.encode(metadata));
  const dataHash = await sha256Hex(encoder.encode(rawData(rawEvent)));
  return sha256Hex(encoder.encode(metadataHash + dataHash));
}

/** Whether the event's "hash" matches the recomputed one. */
export async function verifyHash(event, rawEvent) {
  const hash = await computeHash(event, rawEvent);
  return hash === String(event.hash || '').toLowerCase();
}
