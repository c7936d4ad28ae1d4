// A small time-series chart in inline SVG built with DOM APIs: no styles
// (colors come from style.css classes, geometry from SVG attributes). The
// SVG is decoration; the figure's text says what it shows: the current
// value and the minimum and maximum over the time shown. The time axis
// spans the samples taken so far (the oldest at the left edge), growing
// with them up to the whole window; the figure's data-span holds it in ms.
const NS = 'http://www.w3.org/2000/svg';
const WIDTH = 450; // one unit per 2-s sample of 15 minutes
const HEIGHT = 100;
const MIN_SPAN_MS = 2000; // one sampling interval: a lone sample sits at the right edge

function svg(tag, attrs = {}) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

export class Chart {
  /**
   * figure: an element holding .chart-plot, .chart-scale and
   * .chart-summary; format(value) writes a value with its unit; unknown
   * says what a missing current value means.
   */
  constructor(figure, format, unknown = 'unknown') {
    this.figure = figure;
    this.format = format;
    this.unknown = unknown;
    this.svg = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', 'aria-hidden': 'true', focusable: 'false' });
    this.range = document.createElement('span');
    this.range.className = 'chart-range';
    this.range.setAttribute('aria-hidden', 'true');
    figure.querySelector('.chart-plot').append(this.range, this.svg);
  }

  /**
   * Draws values ([{ at, value }] oldest first, value null where unknown)
   * of the window that ends at now, over the time since the oldest of them
   * (at most the window); a gap between samples longer than maxGap breaks
   * the line.
   */
  draw(values, now, window, maxGap) {
    const known = values.filter((p) => p.value !== null && Number.isFinite(p.value));
    const max = known.reduce((m, p) => Math.max(m, p.value), 0);
    const min = known.reduce((m, p) => Math.min(m, p.value), Infinity);
    const top = niceCeiling(max);
    const span = values.length ? Math.min(window, Math.max(now - values[0].at, MIN_SPAN_MS)) : window;
    const x = (at) => Math.max(0, WIDTH - ((now - at) / span) * WIDTH);
    const y = (value) => HEIGHT - (value / top) * HEIGHT;
    const shapes = [svg('line', { class: 'chart-grid', x1: 0, y1: 0.5, x2: WIDTH, y2: 0.5 }),
      svg('line', { class: 'chart-grid', x1: 0, y1: HEIGHT / 2, x2: WIDTH, y2: HEIGHT / 2 })];
    for (const run of runs(values, maxGap)) {
      const line = run.map((p) => [x(p.at), y(p.value)]);
      if (line.length === 1) line.unshift([line[0][0] - 3, line[0][1]]); // a lone sample: a short dash
      const area = [[line[0][0], HEIGHT], ...line, [line[line.length - 1][0], HEIGHT]];
      shapes.push(svg('polygon', { class: 'chart-area', points: coordinates(area) }));
      shapes.push(svg('polyline', { class: 'chart-line', points: coordinates(line) }));
    }
    shapes.push(svg('line', { class: 'chart-axis', x1: 0, y1: HEIGHT - 0.5, x2: WIDTH, y2: HEIGHT - 0.5 }));
    if (known.length) {
      // The newest value as a dot: a line of no length with round caps.
      const p = known[known.length - 1];
      const [px, py] = [x(p.at).toFixed(1), y(p.value).toFixed(1)];
      shapes.push(svg('line', { class: 'chart-dot', x1: px, y1: py, x2: px, y2: py }));
    }
    this.svg.replaceChildren(...shapes);

    const current = values.length ? values[values.length - 1].value : null;
    const summary = known.length
      ? `Now ${current === null ? this.unknown : this.format(current)}; minimum ${this.format(min)}, maximum ${this.format(max)} over the last ${formatSpan(span)}.`
      : 'No values yet.';
    this.figure.querySelector('.chart-summary').textContent = summary;
    this.figure.querySelector('.chart-scale').textContent = known.length ? this.format(top) : '';
    this.range.textContent = values.length ? `last ${formatSpan(span, true)}` : '';
    Object.assign(this.figure.dataset, {
      now: current === null ? '' : String(current),
      min: known.length ? String(min) : '',
      max: known.length ? String(max) : '',
      points: String(known.length),
      span: String(Math.round(span)),
      first: values.length ? x(values[0].at).toFixed(1) : '',
    });
  }
}

// A time span in words: 40 seconds, 3 minutes, 15 minutes (short: 40 s, 3 min).
function formatSpan(ms, short = false) {
  const seconds = Math.round(ms / 1000);
  if (seconds < 90) return short ? `${seconds} s` : `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
  const minutes = Math.round(seconds / 60);
  return short ? `${minutes} min` : `${minutes} minutes`;
}

function coordinates(pairs) {
  return pairs.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(' ');
}

// The runs of consecutive known values, split at unknown values and gaps.
function runs(values, maxGap) {
  const out = [];
  let run = [];
  let last = null;
  for (const p of values) {
    const known = p.value !== null && Number.isFinite(p.value);
    if (!known || (last && p.at - last.at > maxGap)) {
      if (run.length) out.push(run);
      run = [];
    }
    if (known) run.push(p);
    last = p;
  }
  if (run.length) out.push(run);
  return out;
}

// The smallest of 1, 2, 5 × 10^k at or above value (1 for zero).
function niceCeiling(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}
