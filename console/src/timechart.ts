/**
 * Charts over time, drawn by uPlot with its own facilities: its time axis formats ticks for the span shown (ticks
 * kept 90 px apart so labels never run together), the y range is fitted to the data and clamped to what the
 * figure can be, and the legend shows the latest values without a hover (the legend is set to the last point
 * whenever the cursor is not on the plot).
 */
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

/** The x axis: uPlot's time ticks, far enough apart for their labels. */
export const TIME_AXIS: uPlot.Axis = { space: 90, size: 50 };

/** Keeps the legend on the last point while nothing is hovered (uPlot shows `--` otherwise). */
function legendOnLatest(u: uPlot): void {
  if (u.cursor.idx !== null && u.cursor.idx !== undefined) return;
  const n = u.data[0]?.length ?? 0;
  if (n > 0) u.setLegend({ idx: n - 1 }, false);
}

export const LATEST_LEGEND_HOOKS: uPlot.Hooks.Arrays = {
  ready: [legendOnLatest],
  setData: [legendOnLatest],
  setCursor: [legendOnLatest],
};

/** A chart's y range: the data's, padded, always holding `floor`, never past the possible [lo, hi]. */
export function fittedRange(lo: number, hi: number, floor: number): uPlot.Range.Function {
  return (_u, min, max) => {
    let a = Math.min(min ?? floor, floor);
    let b = Math.max(max ?? floor, floor);
    const pad = (b - a) * 0.1 || Math.max(Math.abs(b), 1) * 0.1;
    a = Math.max(lo, a - (a < floor ? pad : 0));
    b = Math.min(hi, b + pad);
    return [a, b];
  };
}

/** Puts the y scale's range (and where 0 sits, in canvas pixels) on the chart's box, for a reader or a test. */
export function markRange(box: HTMLElement | null, u: uPlot): void {
  const y = u.scales.y;
  if (box === null || y === undefined || y.min === undefined || y.max === undefined) return;
  box.dataset.yMin = String(y.min);
  box.dataset.yMax = String(y.max);
  box.dataset.zeroPx = y.min <= 0 && y.max >= 0 ? String(Math.round(u.valToPos(0, 'y', true))) : '';
}

/** A legend value as the endpoint gives it (the figure itself, not rounded away); a dash for a gap. */
const plain = (_u: uPlot, v: number | null): string => (v === null || v === undefined ? '–' : String(v));

export interface Line {
  label: string;
  values: (number | null)[];
  stroke: string;
  dash?: number[];
}

/**
 * A small chart of figures that are never negative (rates, milliseconds) over time: `t` in seconds since the
 * epoch, the y range from 0 to the data's top.
 */
export function TimeChart(props: { t: number[]; lines: Line[]; unit: string; height?: number; name: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data = (): uPlot.AlignedData => [props.t, ...props.lines.map((l) => l.values)];
  useEffect(() => {
    const el = box.current;
    if (el === null) return undefined;
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth || 560),
      height: props.height ?? 160,
      scales: { x: { time: true }, y: { range: fittedRange(0, Infinity, 0) } },
      axes: [TIME_AXIS, { label: props.unit, size: 56, labelSize: 18 }],
      series: [{}, ...props.lines.map((l) => ({ label: l.label, stroke: l.stroke, width: 1.5, ...(l.dash === undefined ? {} : { dash: l.dash }), points: { show: false }, value: plain }))],
      legend: { live: true },
      hooks: { ...LATEST_LEGEND_HOOKS, draw: [(u: uPlot) => markRange(box.current, u)] },
    };
    plot.current = new uPlot(opts, data(), el);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
    // Made once per mounted chart (its lines are fixed); new points arrive through setData below.
  }, [props.lines.map((l) => l.label).join('|')]);
  useEffect(() => {
    plot.current?.setData(data());
  }, [props.t, props.lines]);
  return html`<div class="chart" ref=${box} data-chart=${props.name} data-points=${props.t.length}></div>`;
}
