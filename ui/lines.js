// LineStore keeps streamed lines exactly as received, in 4 MiB blocks, and
// reads them back for display. The page holds a few blocks and 8 bytes per
// line whatever the result's size; every full block goes to this tab's own
// IndexedDB database, which the browser keeps on disk, and comes back from
// there when one of its lines is shown. (Blobs cannot hold a large result:
// Chromium refuses to read them back with NotReadableError beyond a few
// hundred MiB.) Where IndexedDB cannot be opened (storage turned off, some
// private windows), blocks are kept as Blobs, under a limit well below that.
//
// Nothing that goes wrong is hidden:
// - A store keeps at most limits.disk bytes (limits.blobs with Blobs).
//   Once a line would pass the limit, or once the browser refused to keep a
//   block (quota, disk full), append keeps no more lines and returns false,
//   and stopped says why: the reader stops there, so the count is always
//   the rows that can be shown. A block the browser refused stays in memory.
// - A block that cannot be read back marks its lines: text(i) returns null
//   and failure(i) the error, and onError(error, first, last) runs once with
//   the block's line range; a line still loading has no failure.
// - ready() lets the reader wait while blocks are being written, so memory
//   stays bounded however fast lines arrive.
//
// The tab's database is deleted when the page goes away for good; a
// database whose tab never said goodbye (a crash) is deleted by the next
// console page that finds it unused for an hour.
const SEGMENT = 4 << 20;
const RESIDENT = 6; // blocks kept in memory, the one being filled included
const WRITING = 4; // blocks written at a time before ready() makes the reader wait
const decoder = new TextDecoder();

/** How many bytes of lines a store keeps: on disk, or as Blobs in memory. */
export const limits = { disk: 2 * 1024 ** 3, blobs: 256 << 20 };

export class LineStore {
  /**
   * onLoad runs when lines that were loading can be read; onError(error,
   * first, last) when lines first..last (0-based) cannot be read back.
   */
  constructor(onLoad = () => {}, onError = () => {}) {
    this.onLoad = onLoad;
    this.onError = onError;
    this.segments = [];
    this.clear();
  }

  clear() {
    const sealed = this.segments.filter((s) => s.key);
    if (sealed.length) {
      const [first, last] = [sealed[0].key, sealed[sealed.length - 1].key];
      blocks().then((b) => b.delete(first, last)).catch(() => {}); // what is left goes with the database
    }
    this.segments = []; // { start, size, bytes, key, kept, loading, error }
    this.size = 0;
    this.starts = new Float64Array(1024); // byte offset of each line
    this.count = 0;
    this.resident = [];
    this.writing = 0;
    this.stopped = null; // { message, error } once append keeps no more lines
    this.#wake(true);
  }

  /**
   * Appends one line's bytes (its newline included, if any); returns false,
   * keeping nothing, once the store is full or cannot keep more (stopped
   * says why).
   */
  append(line) {
    if (this.stopped) return false;
    const limit = backendKind === 'blobs' ? limits.blobs : limits.disk;
    if (this.size + line.length > limit) {
      this.stopped = {
        message: `the console keeps at most ${formatLimit(limit)} of a result in the browser${backendKind === 'blobs' ? ` (IndexedDB is not available here: ${describe(blobReason)})` : ''}`,
        error: null,
      };
      return false;
    }
    const start = this.size;
    let seg = this.segments[this.segments.length - 1];
    if (!seg || seg.size + line.length > seg.bytes.length) { // a line is never split over two blocks
      if (seg) this.#seal(seg);
      seg = { start: this.size, size: 0, bytes: new Uint8Array(Math.max(SEGMENT, line.length)), key: 0, kept: false, loading: null, error: null };
      this.segments.push(seg);
      this.#touch(seg);
    }
    seg.bytes.set(line, seg.size);
    seg.size += line.length;
    this.size += line.length;
    if (this.count === this.starts.length) {
      const grown = new Float64Array(this.starts.length * 2);
      grown.set(this.starts);
      this.starts = grown;
    }
    this.starts[this.count] = start;
    this.count += 1;
    return true;
  }

  /**
   * Null when the reader may go on; else a promise that resolves when few
   * enough blocks are being written (or when signal aborts).
   */
  ready(signal) {
    if (this.writing < WRITING) return null;
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      if (signal) signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  /** Line i as text without its newline, or null while it loads or when it cannot be read. */
  text(i) {
    const bytes = this.bytes(i);
    if (!bytes) return null;
    const end = bytes.length && bytes[bytes.length - 1] === 10 ? bytes.length - 1 : bytes.length;
    return decoder.decode(bytes.subarray(0, end));
  }

  /** The bytes of line i, or null while they load or when they cannot be read. */
  bytes(i) {
    const start = this.starts[i];
    const end = i + 1 < this.count ? this.starts[i + 1] : this.size;
    const seg = this.#segmentAt(start);
    if (seg.error) return null;
    if (!seg.bytes) {
      this.#load(seg);
      return null;
    }
    this.#touch(seg);
    return seg.bytes.subarray(start - seg.start, end - seg.start);
  }

  /** Why line i cannot be read back, or null. */
  failure(i) {
    if (i < 0 || i >= this.count) return null;
    return this.#segmentAt(this.starts[i]).error;
  }

  #segmentAt(offset) {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.segments[mid].start <= offset) lo = mid;
      else hi = mid - 1;
    }
    return this.segments[lo];
  }

  // The index of the first line at or after byte offset.
  #lineAt(offset) {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid] < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // Writes a full block away. It stays in memory until it is kept (and then
  // until #touch evicts it); one the browser refused stays for good.
  #seal(seg) {
    seg.bytes = seg.bytes.subarray(0, seg.size);
    seg.key = nextKey;
    nextKey += 1;
    this.writing += 1;
    const segments = this.segments;
    const bytes = seg.bytes;
    blocks().then((b) => b.put(seg.key, bytes)).then(() => {
      seg.kept = true;
    }, (error) => {
      if (this.segments !== segments || this.stopped) return;
      this.stopped = { message: `the browser could not keep more of the result (${describe(error)})`, error };
    }).finally(() => {
      if (this.segments !== segments) return;
      this.writing -= 1;
      this.#touch(null);
      this.#wake(false);
    });
  }

  #wake(all) {
    if (!all && this.writing >= WRITING) return;
    const waiters = this.waiters || [];
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  #load(seg) {
    if (seg.loading) return;
    const segments = this.segments;
    seg.loading = blocks().then((b) => b.get(seg.key)).then((bytes) => {
      if (bytes.length !== seg.size) throw new Error(`a block of ${seg.size} bytes came back with ${bytes.length}`);
      return bytes;
    });
    seg.loading.then((bytes) => {
      seg.loading = null;
      if (this.segments !== segments) return; // cleared meanwhile
      seg.bytes = bytes;
      this.#touch(seg);
      this.onLoad();
    }, (error) => {
      seg.loading = null;
      if (this.segments !== segments) return;
      seg.error = error;
      const next = this.segments[this.segments.indexOf(seg) + 1];
      const first = this.#lineAt(seg.start);
      const last = (next ? this.#lineAt(next.start) : this.count) - 1;
      this.onError(error, first, last);
      this.onLoad(); // the lines show their failure
    });
  }

  // Marks seg (if any) as the most recently used and evicts the oldest
  // blocks that are kept.
  #touch(seg) {
    if (seg) {
      const at = this.resident.indexOf(seg);
      if (at >= 0) this.resident.splice(at, 1);
      this.resident.push(seg);
    }
    while (this.resident.length > RESIDENT) {
      const old = this.resident.findIndex((s) => s.kept);
      if (old < 0) break;
      this.resident[old].bytes = null;
      this.resident.splice(old, 1);
    }
  }
}

/** An error as words: its name and message. */
export function describe(error) {
  if (!error) return 'unknown error';
  const message = error.message || String(error);
  return error.name && error.name !== 'Error' && !message.startsWith(error.name) ? `${error.name}: ${message}` : message;
}

function formatLimit(bytes) {
  return bytes >= 1024 ** 3 ? `${+(bytes / 1024 ** 3).toFixed(1)} GiB` : `${+(bytes / (1 << 20)).toFixed(1)} MiB`;
}

// --- Where the blocks go -------------------------------------------------

// Keys of blocks are unique in the page, whichever store wrote them.
let nextKey = 1;
let backend = null; // a promise of Disk or Blobs
let backendKind = 'disk'; // until IndexedDB failed to open
let blobReason = null;

function blocks() {
  if (!backend) {
    backend = Disk.open().catch((error) => {
      backendKind = 'blobs';
      blobReason = error;
      return new Blobs();
    });
  }
  return backend;
}

const DB_PREFIX = 'eventstore-console-rows-';
const REGISTRY = 'eventstore.rows'; // localStorage: database name → when its tab was last seen (ms)
const STALE = 60 * 60 * 1000;
const HEARTBEAT = 5 * 60 * 1000;

// Disk: the tab's IndexedDB database, one record a block. Writes are
// relaxed (no flush to disk): the blocks matter only while the page lives.
class Disk {
  static async open() {
    if (!globalThis.indexedDB) throw new Error('IndexedDB is missing');
    const id = [...crypto.getRandomValues(new Uint32Array(2))].map((n) => n.toString(16).padStart(8, '0')).join('');
    const name = DB_PREFIX + id;
    seen(name);
    await sweep(name);
    const db = await new Promise((resolve, reject) => {
      const request = indexedDB.open(name, 1);
      request.onupgradeneeded = () => request.result.createObjectStore('blocks');
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    // A request to delete the database (another page found this one
    // stale) waits until the page goes: the connection is never closed.
    const beat = setInterval(() => seen(name), HEARTBEAT);
    addEventListener('pageshow', () => seen(name));
    addEventListener('pagehide', (event) => {
      if (event.persisted) return; // kept for the back button
      clearInterval(beat);
      db.close();
      indexedDB.deleteDatabase(name);
      forget(name);
    });
    return new Disk(db);
  }

  constructor(db) {
    this.db = db;
  }

  put(key, bytes) {
    return new Promise((resolve, reject) => {
      const tx = this.db.transaction('blocks', 'readwrite', { durability: 'relaxed' });
      tx.objectStore('blocks').put(bytes, key);
      tx.oncomplete = () => resolve();
      tx.onabort = () => reject(tx.error || new DOMException('The write was aborted.', 'AbortError'));
    });
  }

  get(key) {
    return new Promise((resolve, reject) => {
      const request = this.db.transaction('blocks').objectStore('blocks').get(key);
      request.onsuccess = () => {
        if (request.result instanceof Uint8Array) resolve(request.result);
        else reject(new DOMException('The block is no longer in the browser\'s storage.', 'NotFoundError'));
      };
      request.onerror = () => reject(request.error);
    });
  }

  delete(first, last) {
    this.db.transaction('blocks', 'readwrite', { durability: 'relaxed' }).objectStore('blocks').delete(IDBKeyRange.bound(first, last));
  }
}

// Blobs: where IndexedDB cannot be opened.
class Blobs {
  constructor() {
    this.blobs = new Map();
  }

  async put(key, bytes) {
    this.blobs.set(key, new Blob([bytes]));
  }

  async get(key) {
    const blob = this.blobs.get(key);
    if (!blob) throw new DOMException('The block is gone.', 'NotFoundError');
    return new Uint8Array(await blob.arrayBuffer());
  }

  delete(first, last) {
    for (const key of this.blobs.keys()) if (key >= first && key <= last) this.blobs.delete(key);
  }
}

function registry() {
  try {
    return JSON.parse(localStorage.getItem(REGISTRY)) || {};
  } catch {
    return {};
  }
}

function save(entries) {
  try {
    localStorage.setItem(REGISTRY, JSON.stringify(entries));
  } catch {
    // no localStorage: databases of crashed tabs stay until the browser clears the site's data
  }
}

function seen(name) {
  save({ ...registry(), [name]: Date.now() });
}

function forget(name) {
  const entries = registry();
  delete entries[name];
  save(entries);
}

// Deletes the databases of pages unseen for an hour (and of none at all).
async function sweep(own) {
  let names = [];
  try {
    names = (await indexedDB.databases()).map((d) => d.name).filter((n) => n && n.startsWith(DB_PREFIX));
  } catch {
    // the list is optional
  }
  const entries = registry(); // read after the list: a page registers its name before it creates the database
  const now = Date.now();
  for (const name of new Set([...names, ...Object.keys(entries)])) {
    if (name === own || now - (entries[name] || 0) < STALE) continue;
    indexedDB.deleteDatabase(name);
    delete entries[name];
  }
  save({ ...entries, [own]: now });
}
