/**
 * The chart of an experiment's difference over time with its fixed and always-valid 95% intervals (uPlot draws;
 * the bands are uPlot's). Values in percentage points, clamped to what a difference of rates can be (±100 pp);
 * a zero line, so whether an interval excludes 0 is seen at once; it starts at the first point with a value.
 */
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { HistorySeries } from './report.js';
import { fittedRange, LATEST_LEGEND_HOOKS, markRange, TIME_AXIS } from './timechart.js';

/** A difference of two rates lies within ±100 pp: an interval's end beyond is drawn at the edge. */
const PP_LIMIT = 100;
const toPp = (xs: (number | null)[]): (number | null)[] => xs.map((x) => (x === null ? null : Math.max(-PP_LIMIT, Math.min(PP_LIMIT, x * 100))));

/** From the first point holding a value: earlier snapshots (no result yet) are empty time. */
function data(s: HistorySeries): uPlot.AlignedData {
  const cols = [s.difference, s.fixedLo, s.fixedHi, s.seqLo, s.seqHi];
  let first = s.t.findIndex((_, i) => cols.some((c) => c[i] !== null));
  if (first < 0) first = s.t.length;
  return [s.t.slice(first), ...cols.map((c) => toPp(c.slice(first)))];
}

/** The zero line, drawn over the bands and under nothing: grey, across the plot. */
function zeroLine(u: uPlot): void {
  const y = u.scales.y;
  if (y === undefined || y.min === undefined || y.max === undefined || y.min > 0 || y.max < 0) return;
  const py = Math.round(u.valToPos(0, 'y', true));
  const { ctx, bbox } = u;
  ctx.save();
  ctx.strokeStyle = '#1d2330';
  ctx.lineWidth = 2 * devicePixelRatio; // whole pixel rows either side of the value: a crisp line
  ctx.beginPath();
  ctx.moveTo(bbox.left, py);
  ctx.lineTo(bbox.left + bbox.width, py);
  ctx.stroke();
  ctx.restore();
}

/** A legend value in percentage points; a dash where the report has none (e.g. before the burn-in). */
const ppValue = (_u: uPlot, v: number | null): string => (v === null || v === undefined ? '–' : `${v > 0 ? '+' : ''}${v.toFixed(1)} pp`);

function options(width: number, label: string, box: () => HTMLElement | null): uPlot.Options {
  return {
    width,
    height: 260,
    scales: { x: { time: true }, y: { range: fittedRange(-PP_LIMIT, PP_LIMIT, 0) } },
    axes: [TIME_AXIS, { label: `${label} (pp)`, size: 60 }],
    series: [
      {},
      { label: 'difference', stroke: '#2f5fd0', width: 2, points: { show: true, size: 5 }, value: ppValue },
      { label: 'fixed 95% low', stroke: '#8aa4e6', dash: [4, 4], value: ppValue },
      { label: 'fixed 95% high', stroke: '#8aa4e6', dash: [4, 4], value: ppValue },
      { label: 'always-valid low', stroke: '#d08a2f', value: ppValue },
      { label: 'always-valid high', stroke: '#d08a2f', value: ppValue },
    ],
    bands: [
      { series: [5, 4], fill: 'rgba(208, 138, 47, 0.12)' },
      { series: [3, 2], fill: 'rgba(47, 95, 208, 0.10)' },
    ],
    legend: { live: true },
    hooks: { ...LATEST_LEGEND_HOOKS, draw: [zeroLine, (u: uPlot) => markRange(box(), u)] },
  };
}

export function DifferenceChart(props: { series: HistorySeries; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const d = data(props.series);
  useEffect(() => {
    const el = box.current;
    if (el === null) return undefined;
    plot.current = new uPlot(options(Math.max(320, el.clientWidth || 800), props.label, () => box.current), data(props.series), el);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
    // Made once per mounted chart; new points arrive through setData below.
  }, []);
  useEffect(() => {
    plot.current?.setData(data(props.series));
  }, [props.series]);
  return html`<div class="chart" ref=${box} data-chart="difference" data-points=${d[0].length}></div>`;
}
