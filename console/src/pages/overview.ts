/** Overview: the gateway itself (GET /gateway/overview). */
import { html } from 'htm/preact';
import { usePoll } from '../api.js';
import { bytes, duration, ms, pct, time } from '../format.js';
import { pulseColumns, span, type PulseJson } from '../pulse.js';
import { TimeChart } from '../timechart.js';

interface OverviewJson {
  version: string;
  uptime_s: number;
  listeners: { agent: string | null; admin: string | null };
  store: { kind: string; up: boolean; fallbacks: number };
  config: { path: string | null; last_reload: { at: string; trigger: string; ok: boolean; detail: string | null } | null };
  batches: { per_second: number; in_flight: number };
  error_candidates: Record<string, number>;
  overhead_ms: { samples: number; p50: number | null; p99: number | null };
  cache: { hits: number; misses: number; hit_rate: number | null; bytes: number; entries: number } | null;
}

/** A figure; `text` for a long value (an address, a path) written smaller. */
const stat = (label: string, value: unknown, sub?: unknown, id?: string, text = false) =>
  html`<div class=${text ? 'stat text' : 'stat'} data-stat=${id ?? label}><div class="label">${label}</div><div class="value">${value}</div>${sub === undefined ? null : html`<div class="sub">${sub}</div>`}</div>`;

export function Overview(props: { onUnauthorized: () => void }) {
  const polled = usePoll(['/gateway/overview', '/gateway/pulse'], ([o, p]) => ({ o: o as OverviewJson, p: p as PulseJson }), props.onUnauthorized); // the endpoints' documented shapes
  const { error } = polled;
  if (polled.data === undefined) return html`<p class="muted">${error ?? 'Loading…'}</p>`;
  const { o: data, p: pulse } = polled.data;
  const cols = pulseColumns(pulse);
  const cache = data.cache;
  const reload = data.config.last_reload;
  const codes = Object.entries(data.error_candidates);
  return html`<h2>Overview</h2>
    ${error === undefined ? null : html`<div class="banner error">${error}</div>`}
    <div class="grid">
      ${stat('Version', data.version)}
      ${stat('Uptime', duration(data.uptime_s))}
      ${stat('Agent listener', data.listeners.agent ?? '–', undefined, undefined, true)}
      ${stat('Admin listener', data.listeners.admin ?? '–', undefined, undefined, true)}
      ${stat('Store', html`${data.store.kind} <span class=${`badge ${data.store.up ? 'ok' : 'bad'}`}>${data.store.up ? 'up' : 'down'}</span>`, `${data.store.fallbacks} fallbacks to local state`, 'store')}
      ${stat('Config file', data.config.path ?? 'none (started without one)', reload === null ? 'not reloaded since start' : html`last reload ${time(reload.at)} (${reload.trigger}): <span class=${`badge ${reload.ok ? 'ok' : 'bad'}`}>${reload.ok ? 'ok' : 'refused'}</span> ${reload.detail ?? ''}`, 'config', true)}
      ${stat('Batches per second', data.batches.per_second.toFixed(2), 'over the last 10 s', 'rate')}
      ${stat('Batches in flight', data.batches.in_flight, undefined, 'in-flight')}
      ${stat('Overhead p50 / p99', `${ms(data.overhead_ms.p50)} / ${ms(data.overhead_ms.p99)}`, `${data.overhead_ms.samples} batches since start`, 'overhead')}
      ${cache === null
        ? null
        : html`${stat('Cache hit rate', pct(cache.hit_rate), `${cache.hits} hits · ${cache.misses} misses since start`, 'cache-hit-rate')}
            ${stat('Cache held', bytes(cache.bytes), `${cache.entries} entries in this process`, 'cache-held')}`}
    </div>
    <div class="card spaced" data-pulse>
      <h3>The last hour <span class="muted small normal">${span(pulse)}</span></h3>
      <div class="charts">
        <div><div class="chart-title">Batches per second</div>
          <${TimeChart} name="batches" t=${cols.t} unit="batches/s" lines=${[{ label: 'batches/s', values: cols.batches, stroke: '#2f5fd0' }]} /></div>
        <div><div class="chart-title">Error candidates per second</div>
          <${TimeChart} name="errors" t=${cols.t} unit="candidates/s" lines=${[{ label: 'errors/s', values: cols.errors, stroke: '#b42318' }]} /></div>
        <div><div class="chart-title">Overhead</div>
          <${TimeChart} name="overhead" t=${cols.t} unit="ms" lines=${[
            { label: 'p50', values: cols.overheadP50, stroke: '#1a7f37' },
            { label: 'p95', values: cols.overheadP95, stroke: '#9a6700' },
          ]} /></div>
      </div>
    </div>
    <div class="card spaced">
      <h3>Error candidates by code (since start)</h3>
      ${codes.length === 0
        ? html`<p class="muted" data-empty="errors">No error candidates.</p>`
        : html`<table><thead><tr><th>code</th><th class="num">candidates</th></tr></thead><tbody>
            ${codes.map(([c, n]) => html`<tr><td><code>${c}</code></td><td class="num">${n}</td></tr>`)}</tbody></table>`}
    </div>`;
}
