// LineStore keeps streamed lines exactly as received, in 4 MiB segments,
// and reads them back for display: a full segment becomes a Blob (which the
// browser keeps outside the page, on disk if it must), and the store keeps
// a few segments in memory and 8 bytes per line whatever the result's
// size. Reading a line whose segment is not in memory starts loading it and
// returns null; onLoad runs when it is there.
const SEGMENT = 4 << 20;
const RESIDENT = 6; // segments kept in memory, the one being filled included
const decoder = new TextDecoder();

export class LineStore {
  constructor(onLoad = () => {}) {
    this.onLoad = onLoad;
    this.clear();
  }

  clear() {
    this.segments = []; // { start, size, bytes, blob, loading }
    this.size = 0;
    this.starts = new Float64Array(1024); // byte offset of each line
    this.count = 0;
    this.resident = [];
  }

  /** Appends one line's bytes (its newline included, if any). */
  append(line) {
    const start = this.size;
    let seg = this.segments[this.segments.length - 1];
    if (!seg || seg.size + line.length > seg.bytes.length) { // a line is never split over two segments
      if (seg) this.#seal(seg);
      seg = { start: this.size, size: 0, bytes: new Uint8Array(Math.max(SEGMENT, line.length)), blob: null, loading: null };
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

  // A sealed segment stays readable until #touch evicts it.
  #seal(seg) {
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
