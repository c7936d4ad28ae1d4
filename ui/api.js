// Thin client for the eventstore HTTP API: adds the bearer token, turns
// error answers into Errors carrying the body text and status, and reads
// NDJSON streams line by line.
export const TOKEN_KEY = 'eventstore.token';

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

let onUnauthorized = () => {};

/** Registers the callback run whenever the API answers 401. */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
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
 * POSTs body to path and yields one item per NDJSON line:
 * { type, payload, raw } where raw is the exact text of the payload as
 * received (the line with the envelope stripped). onOpen (optional) is
 * called with the Response once the stream is open. An error line throws an
 * ApiError. Aborting signal stops the stream (the generator then throws an
 * AbortError, which callers may ignore with isAbort).
 */
export async function* streamNDJSON(path, body, { signal, onOpen } = {}) {
  const response = await request(path, { method: 'POST', body, signal });
  if (onOpen) onOpen(response);
  if (!response.body) return;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const item = parseLine(line);
        if (item) yield item;
      }
    }
    buffer += decoder.decode();
    const item = parseLine(buffer);
    if (item) yield item;
  } finally {
    reader.cancel().catch(() => {});
  }
}

function parseLine(line) {
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
