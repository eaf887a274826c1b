/**
 * The chart of an experiment's difference over time with its fixed and always-valid 95% intervals (uPlot draws;
 * the bands are uPlot's). Values in percentage points.
 */
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { HistorySeries } from './report.js';

const toPp = (xs: (number | null)[]): (number | null)[] => xs.map((x) => (x === null ? null : x * 100));

function data(s: HistorySeries): uPlot.AlignedData {
  return [s.t, toPp(s.difference), toPp(s.fixedLo), toPp(s.fixedHi), toPp(s.seqLo), toPp(s.seqHi)];
}

function options(width: number, label: string): uPlot.Options {
  return {
    width,
    height: 260,
    scales: { x: { time: true } },
    axes: [{}, { label: `${label} (pp)`, size: 60 }],
    series: [
      {},
      { label: 'difference', stroke: '#2f5fd0', width: 2, points: { show: true, size: 5 } },
      { label: 'fixed 95% low', stroke: '#8aa4e6', dash: [4, 4] },
      { label: 'fixed 95% high', stroke: '#8aa4e6', dash: [4, 4] },
      { label: 'always-valid low', stroke: '#d08a2f' },
      { label: 'always-valid high', stroke: '#d08a2f' },
    ],
    bands: [
      { series: [5, 4], fill: 'rgba(208, 138, 47, 0.12)' },
      { series: [3, 2], fill: 'rgba(47, 95, 208, 0.10)' },
    ],
  };
}

export function DifferenceChart(props: { series: HistorySeries; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current;
    if (el === null) return undefined;
    plot.current = new uPlot(options(Math.max(320, el.clientWidth || 800), props.label), data(props.series), el);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
    // Made once per mounted chart; new points arrive through setData below.
  }, []);
  useEffect(() => {
    plot.current?.setData(data(props.series));
  }, [props.series]);
  return html`<div class="chart" ref=${box} data-points=${props.series.t.length}></div>`;
}
