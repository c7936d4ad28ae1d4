// A small OpenMetrics text parser: returns [{ name, labels, value }].
export function parseMetrics(text) {
  const samples = [];
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    samples.push({ name: match[1], labels: parseLabels(match[3] || ''), value: Number(match[4]) });
  }
  return samples;
}

function parseLabels(text) {
  const labels = {};
  const re = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  let match;
  while ((match = re.exec(text))) {
    labels[match[1]] = match[2].replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
  }
  return labels;
}

/** The first sample named name (optionally whose labels match), or undefined. */
export function findMetric(samples, name, labels = {}) {
  return samples.find((s) => s.name === name
    && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The sum of all samples named name (across label sets). */
export function sumMetric(samples, name) {
  return samples.filter((s) => s.name === name).reduce((sum, s) => sum + s.value, 0);
}
