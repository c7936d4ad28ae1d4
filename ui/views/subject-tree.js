// The subject tree, loaded a level at a time: expanding a node reads the
// subjects below it (read-subjects has no depth limit) and keeps only its
// direct children, in the server's order, noting which of them have
// children of their own. visible is the flattened list of shown nodes.
import { streamNDJSON } from '../api.js';

function node(subject, parent, posinset = 1) {
  const depth = depthOf(subject);
  const name = subject === '/' ? '/' : subject.slice(subject.lastIndexOf('/') + 1);
  return { subject, name, depth, parent, posinset, setsize: 1, children: null, hasChildren: null, expanded: false, loading: false };
}

function depthOf(subject) {
  if (subject === '/') return 0;
  let depth = 0;
  for (let i = 0; i < subject.length; i += 1) if (subject.charCodeAt(i) === 47) depth += 1;
  return depth;
}

export class SubjectTree {
  constructor() {
    this.root = node('/', null);
    this.visible = [this.root];
  }

  /** Reads the direct children of parent; onProgress(read) follows the stream. */
  async load(parent, signal, onProgress = () => {}) {
    const children = [];
    let read = 0;
    for await (const item of streamNDJSON('/api/v1/read-subjects', { baseSubject: parent.subject }, { signal })) {
      if (item.type !== 'subject' || !item.payload) continue;
      read += 1;
      if (read % 2048 === 0) onProgress(read);
      const { subject } = item.payload;
      const depth = depthOf(subject);
      if (depth === parent.depth + 1) children.push(node(subject, parent, children.length + 1));
      else if (depth > parent.depth + 1 && children.length) children[children.length - 1].hasChildren = true;
    }
    for (const child of children) {
      child.setsize = children.length;
      if (child.hasChildren === null) child.hasChildren = false;
    }
    parent.children = children;
    parent.hasChildren = children.length > 0;
    return read;
  }

  /** Shows the loaded children of n (and their expanded descendants). */
  expand(n) {
    if (n.expanded || !n.children) return;
    n.expanded = true;
    const at = this.visible.indexOf(n);
    if (at >= 0) this.visible = this.visible.slice(0, at + 1).concat(flatten(n.children), this.visible.slice(at + 1));
  }

  collapse(n) {
    if (!n.expanded) return;
    const at = this.visible.indexOf(n);
    let end = at + 1;
    while (end < this.visible.length && this.visible[end].depth > n.depth) end += 1;
    this.visible.splice(at + 1, end - at - 1);
    n.expanded = false;
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
