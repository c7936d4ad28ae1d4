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

/** The cumulative buckets of histogram name as [{ le, count }], by bound (+Inf last). */
export function buckets(samples, name) {
  return samples.filter((s) => s.name === `${name}_bucket`)
    .map((s) => ({ le: s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), count: s.value }))
    .sort((a, b) => a.le - b.le);
}

/**
 * The q-quantile of cumulative buckets, interpolated linearly inside its
 * bucket as Prometheus' histogram_quantile does (the highest finite bound
 * when it falls in +Inf); null without observations.
 */
export function quantile(q, list) {
  const total = list.length ? list[list.length - 1].count : 0;
  if (!(total > 0)) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const { le, count } of list) {
    if (count >= rank) {
      if (le === Infinity) return lower;
      return lower + (le - lower) * ((rank - below) / (count - below));
    }
    lower = le;
    below = count;
  }
  return lower;
}
