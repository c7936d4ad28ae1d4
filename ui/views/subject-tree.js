// The subject tree, loaded a level at a time: opening a node reads the
// subjects below it (read-subjects has no depth limit) and keeps only its
// direct children, in the server's order, noting which of them have
// children of their own; they show as they stream in. visible is the
// flattened list of shown nodes.
import { readLines, lineText, parseLine } from '../api.js';

const PREFIX = new TextEncoder().encode('{"type":"subject","payload":{"subject":"');
const SUFFIX = new TextEncoder().encode('"}}');
const SLASH = 47;
const REVEAL_MS = 100;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * Streams the subjects below base, calling visit(depth, line, start, end)
 * with the subject at line[start..end). Subject lines are read from their
 * bytes, without parsing (a subject holds no character JSON escapes);
 * another spelling is parsed, and an error line throws.
 */
export async function readSubjects(base, signal, visit) {
  for await (const batch of readLines('/api/v1/read-subjects', { baseSubject: base }, { signal })) {
    for (let line of batch) {
      let end = subjectEnd(line);
      if (end < 0) {
        const item = parseLine(lineText(line));
        if (!item || item.type !== 'subject' || !item.payload) continue;
        line = encoder.encode(item.payload.subject);
        end = line.length;
        visit(depthOf(line, 0, end), line, 0, end);
      } else {
        visit(depthOf(line, PREFIX.length, end), line, PREFIX.length, end);
      }
    }
  }
}

/** The text of the subject at line[start..end). */
export function subjectText(line, start, end) {
  return decoder.decode(line.subarray(start, end));
}

// The end of the subject in a subject line as the server writes it, or -1.
function subjectEnd(line) {
  let end = line.length;
  if (end && line[end - 1] === 10) end -= 1;
  end -= SUFFIX.length;
  if (end < PREFIX.length) return -1;
  for (let i = 0; i < PREFIX.length; i += 1) if (line[i] !== PREFIX[i]) return -1;
  for (let i = 0; i < SUFFIX.length; i += 1) if (line[end + i] !== SUFFIX[i]) return -1;
  return end;
}

// Segments of the subject at line[start..end): "/" is 0, "/a/b" is 2.
function depthOf(line, start, end) {
  if (end - start === 1) return 0;
  let depth = 0;
  for (let i = start; i < end; i += 1) if (line[i] === SLASH) depth += 1;
  return depth;
}

function node(subject, depth, parent, posinset = 1) {
  const name = subject === '/' ? '/' : subject.slice(subject.lastIndexOf('/') + 1);
  return { subject, name, depth, parent, posinset, children: null, hasChildren: null, expanded: false, loading: false };
}

export class SubjectTree {
  constructor() {
    this.root = node('/', 0, null);
    this.visible = [this.root];
  }

  /**
   * Opens parent and reads its direct children, showing them as they come
   * (onProgress(read) follows the stream); on failure parent closes again.
   */
  async load(parent, signal, onProgress = () => {}) {
    const children = [];
    parent.children = children;
    parent.expanded = true;
    let read = 0;
    let revealed = performance.now();
    try {
      await readSubjects(parent.subject, signal, (depth, line, start, end) => {
        read += 1;
        if (depth === parent.depth + 1) children.push(node(subjectText(line, start, end), depth, parent, children.length + 1));
        else if (depth > parent.depth + 1 && children.length) children[children.length - 1].hasChildren = true;
        if (read % 1024 === 0 && performance.now() - revealed > REVEAL_MS) {
          revealed = performance.now();
          if (parent.expanded) this.expand(parent);
          onProgress(read);
        }
      });
    } catch (error) {
      this.collapse(parent);
      parent.children = null;
      throw error;
    }
    for (const child of children) if (child.hasChildren === null) child.hasChildren = false;
    parent.hasChildren = children.length > 0;
    if (parent.expanded) this.expand(parent);
    return read;
  }

  /** Shows the loaded children of n (and their open descendants). */
  expand(n) {
    if (!n.children) return;
    this.#hideDescendants(n);
    n.expanded = true;
    const at = this.visible.indexOf(n);
    if (at >= 0) this.visible = this.visible.slice(0, at + 1).concat(flatten(n.children), this.visible.slice(at + 1));
  }

  collapse(n) {
    this.#hideDescendants(n);
    n.expanded = false;
  }

  #hideDescendants(n) {
    const at = this.visible.indexOf(n);
    if (at < 0) return;
    let end = at + 1;
    while (end < this.visible.length && this.visible[end].depth > n.depth) end += 1;
    this.visible.splice(at + 1, end - at - 1);
  }

  /** The subjects of the expanded nodes, parents first. */
  expandedSubjects() {
    return this.visible.filter((n) => n.expanded).map((n) => n.subject);
  }

  /** The visible node with subject, or null. */
  find(subject) {
    return this.visible.find((n) => n.subject === subject) || null;
  }
}

// The nodes in display order: each followed by its expanded descendants.
// (No argument spreading: a level may hold hundreds of thousands.)
function flatten(nodes) {
  const out = [];
  const stack = [...nodes].reverse();
  while (stack.length) {
    const n = stack.pop();
    out.push(n);
    if (n.expanded && n.children) for (let i = n.children.length - 1; i >= 0; i -= 1) stack.push(n.children[i]);
  }
  return out;
}
