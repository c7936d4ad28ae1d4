// Thin client for the eventstore HTTP API: adds the bearer token, turns
// error answers into Errors carrying the body text and status, and reads
// NDJSON streams line by line.
export const TOKEN_KEY = 'eventstore.token';
const FORBIDDEN = 'forbidden: insufficient permissions';

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

let onUnauthorized = () => {};
let onForbidden = () => {};

/** Registers the callback run whenever the API answers 401. */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/** Registers the callback run whenever a grant is missing (403). */
export function setForbiddenHandler(fn) {
  onForbidden = fn;
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * One request at a time for a view: start() aborts the one before and
 * returns the new one's AbortController; owns(run) tells whether run is
 * still the current request, finish(run) releases it if so, and stop()
 * aborts whatever runs.
 */
export class Latest {
  #current = null;

  start() {
    this.stop();
    this.#current = new AbortController();
    return this.#current;
  }

  owns(run) {
    return this.#current === run;
  }

  finish(run) {
    if (this.#current === run) this.#current = null;
  }

  stop() {
    if (this.#current) this.#current.abort();
    this.#current = null;
  }

  get running() {
    return this.#current !== null;
  }
}

/** Whether an error comes from an aborted fetch. */
export function isAbort(error) {
  return error && error.name === 'AbortError';
}

/**
 * Performs a request. body (if given) is sent as JSON. Options: signal,
 * okStatuses (extra statuses treated as success), token (override).
 * Resolves to the Response; rejects with an ApiError on other statuses.
 */
export async function request(path, { method = 'GET', body, signal, okStatuses = [], token } = {}) {
  const headers = { Authorization: `Bearer ${token ?? getToken()}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: 'no-store',
  });
  if (response.ok || okStatuses.includes(response.status)) return response;
  let text = '';
  try {
    text = (await response.text()).trim();
  } catch {
    // ignore: the status is enough
  }
  if (response.status === 401) {
    if (token === undefined) onUnauthorized();
    throw new ApiError(text || 'The token was not accepted.', 401);
  }
  if (response.status === 403 && text === FORBIDDEN && token === undefined) onForbidden();
  throw new ApiError(text || `Request failed with status ${response.status}.`, response.status);
}

/** POSTs body and parses a JSON answer. */
export async function postJSON(path, body, options = {}) {
  const response = await request(path, { ...options, method: 'POST', body });
  return response.json();
}

/** GETs path and returns the text answer. */
export async function getText(path, options = {}) {
  const response = await request(path, options);
  return response.text();
}

/**
 * Resolves after a task boundary if the caller has held the main thread for
 * more than a few milliseconds since the last one, so that long streams
 * never block input or rendering; otherwise returns null (no await needed).
 */
const SLICE_MS = 8;
let sliceStart = performance.now();
export function breathe() {
  if (performance.now() - sliceStart < SLICE_MS) return null;
  const next = globalThis.scheduler && typeof globalThis.scheduler.yield === 'function'
    ? globalThis.scheduler.yield()
    : new Promise((resolve) => setTimeout(resolve, 0));
  return next.then(() => {
    sliceStart = performance.now();
  });
}

const NEWLINE = 10;
const MAX_BATCH = 512;

/**
 * POSTs body to path and yields the response's lines as batches of
 * Uint8Arrays: each the exact bytes of one line, its newline included when
 * the server sent one. Bytes are never decoded or re-encoded here. onOpen
 * (optional) is called with the Response once the stream is open. Aborting
 * signal stops the stream (the generator then throws an AbortError).
 */
export async function* readLines(path, body, { signal, onOpen } = {}) {
  const response = await request(path, { method: 'POST', body, signal });
  if (onOpen) onOpen(response);
  if (!response.body) return;
  const reader = response.body.getReader();
  let carry = null; // the start of a line split across chunks
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      let start = 0;
      let batch = [];
      for (let end = value.indexOf(NEWLINE); end >= 0; end = value.indexOf(NEWLINE, start)) {
        let line = value.subarray(start, end + 1);
        if (carry) {
          line = concat(carry, line);
          carry = null;
        }
        batch.push(line);
        start = end + 1;
        if (batch.length === MAX_BATCH) {
          yield batch;
          batch = [];
          const pause = breathe();
          if (pause) await pause;
        }
      }
      if (start < value.length) carry = carry ? concat(carry, value.subarray(start)) : value.slice(start);
      if (batch.length) yield batch;
      const pause = breathe();
      if (pause) await pause;
    }
    if (carry && carry.length) yield [carry];
  } finally {
    reader.cancel().catch(() => {});
  }
}

function concat(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

const decoder = new TextDecoder();

/** Decodes the bytes of one line (without its newline) to text. */
export function lineText(line) {
  const end = line.length && line[line.length - 1] === NEWLINE ? line.length - 1 : line.length;
  return decoder.decode(line.subarray(0, end));
}

/** Whether the bytes of a line begin with the bytes prefix. */
export function startsWith(bytes, prefix) {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i += 1) if (bytes[i] !== prefix[i]) return false;
  return true;
}

/**
 * POSTs body to path and yields one item per NDJSON line:
 * { type, payload, raw } where raw is the exact text of the payload as
 * received (the line with the envelope stripped). onOpen (optional) is
 * called with the Response once the stream is open. An error line throws an
 * ApiError. Aborting signal stops the stream (the generator then throws an
 * AbortError, which callers may ignore with isAbort).
 */
export async function* streamNDJSON(path, body, options = {}) {
  for await (const batch of readLines(path, body, options)) {
    for (const line of batch) {
      const item = parseLine(lineText(line));
      if (item) yield item;
    }
  }
}

/** Parses one NDJSON line: null for a blank one; an error line throws. */
export function parseLine(line) {
  const text = line.trim();
  if (!text) return null;
  const message = JSON.parse(text);
  if (message.type === 'error') {
    const detail = message.payload && message.payload.error;
    throw new ApiError(detail || 'The stream ended with an error.', 200);
  }
  return { type: message.type, payload: message.payload, raw: rawPayload(text) };
}

/** Extracts the payload's raw JSON text from an envelope line. */
function rawPayload(line) {
  const key = '"payload":';
  const start = line.indexOf(key);
  if (start < 0) return '';
  const end = line.lastIndexOf('}');
  return line.slice(start + key.length, end).trim();
}
