// Spool keeps streamed bytes exactly as received in 4 MiB segments: a full
// segment becomes a Blob (which the browser keeps outside the page, on disk
// if it must) and its buffer takes the next segment, so a spool holds one
// segment in the tab's memory however much it received.
//
// LineStore is a Spool of lines that can read them back, for display: it
// keeps a few segments in memory and 8 bytes per line whatever the
// result's size. Reading a line whose segment is not in memory starts
// loading it and returns null; onLoad runs when it is there.
const SEGMENT = 4 << 20;
const RESIDENT = 6; // segments kept in memory, the one being filled included
const decoder = new TextDecoder();

export class Spool {
  constructor() {
    this.clear();
  }

  clear() {
    this.segments = []; // { start, size, bytes, blob, loading }
    this.size = 0;
    this.spare = null; // a sealed segment's buffer, for the next one
  }

  /** Appends bytes (never split over two segments) and returns their segment. */
  append(bytes) {
    let seg = this.segments[this.segments.length - 1];
    if (!seg || seg.size + bytes.length > seg.bytes.length) {
      if (seg) this.seal(seg);
      const size = Math.max(SEGMENT, bytes.length);
      const buffer = this.spare && this.spare.length >= size ? this.spare : new Uint8Array(size);
      this.spare = null;
      seg = { start: this.size, size: 0, bytes: buffer, blob: null, loading: null };
      this.segments.push(seg);
    }
    seg.bytes.set(bytes, seg.size);
    seg.size += bytes.length;
    this.size += bytes.length;
    return seg;
  }

  /** Turns a full segment into a Blob (a copy) and keeps its buffer for the next. */
  seal(seg) {
    seg.blob = new Blob([seg.bytes.subarray(0, seg.size)]);
    this.spare = seg.bytes;
    seg.bytes = null;
  }
}

export class LineStore extends Spool {
  constructor(onLoad = () => {}) {
    super();
    this.onLoad = onLoad;
  }

  clear() {
    super.clear();
    this.starts = new Float64Array(1024); // byte offset of each line
    this.count = 0;
    this.resident = [];
  }

  /** Appends one line's bytes (its newline included, if any). */
  append(line) {
    const start = this.size;
    const segments = this.segments.length;
    const seg = super.append(line);
    if (this.segments.length !== segments) this.#touch(seg);
    if (this.count === this.starts.length) {
      const grown = new Float64Array(this.starts.length * 2);
      grown.set(this.starts);
      this.starts = grown;
    }
    this.starts[this.count] = start;
    this.count += 1;
    return seg;
  }

  /** Line i as text without its newline, or null while its segment loads. */
  text(i) {
    const bytes = this.bytes(i);
    if (!bytes) return null;
    const end = bytes.length && bytes[bytes.length - 1] === 10 ? bytes.length - 1 : bytes.length;
    return decoder.decode(bytes.subarray(0, end));
  }

  /** The bytes of line i, or null while its segment loads. */
  bytes(i) {
    const start = this.starts[i];
    const end = i + 1 < this.count ? this.starts[i + 1] : this.size;
    const seg = this.#segmentAt(start);
    if (!seg.bytes) {
      this.#load(seg);
      return null;
    }
    this.#touch(seg);
    return seg.bytes.subarray(start - seg.start, end - seg.start);
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

  // A sealed segment stays readable (its buffer is not reused) until #touch
  // evicts it.
  seal(seg) {
    seg.bytes = seg.bytes.subarray(0, seg.size);
    seg.blob = new Blob([seg.bytes]);
  }

  #load(seg) {
    if (seg.loading) return;
    const segments = this.segments;
    seg.loading = seg.blob.arrayBuffer().then((buffer) => {
      seg.loading = null;
      if (this.segments !== segments) return; // cleared meanwhile
      seg.bytes = new Uint8Array(buffer);
      this.#touch(seg);
      this.onLoad();
    }, () => {
      seg.loading = null; // tried again on the next read
    });
  }

  // Marks seg as the most recently used and evicts the oldest sealed segments.
  #touch(seg) {
    const at = this.resident.indexOf(seg);
    if (at >= 0) this.resident.splice(at, 1);
    this.resident.push(seg);
    while (this.resident.length > RESIDENT) {
      const old = this.resident.findIndex((s) => s.blob);
      if (old < 0) break;
      this.resident[old].bytes = null;
      this.resident.splice(old, 1);
    }
  }
}
