// Subjects: the subject tree with a filter; each links to its events.
import { streamNDJSON, isAbort, Latest } from '../api.js';
import { $, el, showError, errorMessage } from '../dom.js';

let subjects = [];
const requests = new Latest();

export function init() {
  $('subject-filter').addEventListener('input', render);
  $('subjects-refresh').addEventListener('click', () => {
    load().catch(() => {});
  });
}

export function enter() {
  return load();
}

export function leave() {
  requests.stop();
}

async function load() {
  const own = requests.start();
  showError($('subjects-error'), '');
  $('subjects-count').textContent = 'Loading…';
  const found = [];
  try {
    for await (const item of streamNDJSON('/api/v1/read-subjects', { baseSubject: '/' }, { signal: own.signal })) {
      if (item.type === 'subject' && item.payload) found.push(item.payload.subject);
    }
    subjects = found;
  } catch (error) {
    if (isAbort(error)) return;
    showError($('subjects-error'), `Could not read subjects: ${errorMessage(error)}`);
  } finally {
    requests.finish(own);
  }
  render();
}

function depth(subject) {
  return subject === '/' ? 0 : subject.split('/').length - 1;
}

function render() {
  const filter = $('subject-filter').value.trim().toLowerCase();
  const shown = filter ? subjects.filter((s) => s.toLowerCase().includes(filter)) : subjects;
  const items = shown.map((subject) => {
    const name = subject === '/' ? '/' : subject.slice(subject.lastIndexOf('/') + 1);
    const link = el('a', { href: `#/events?subject=${encodeURIComponent(subject)}`, 'data-subject': subject, title: subject },
      filter ? subject : name);
    const item = el('li', { class: 'tree-item' }, link);
    item.style.paddingLeft = `${(filter ? 0 : depth(subject)) * 1.25}rem`;
    return item;
  });
  if (!items.length) items.push(el('li', { class: 'muted', text: subjects.length ? 'No subject matches the filter.' : 'No subjects.' }));
  $('subject-tree').replaceChildren(...items);
  $('subjects-count').textContent = `${shown.length} of ${subjects.length} subjects`;
}
