/** Backends: every replica and why it is in its state; agents and routes and whether each can serve. */
import { html } from 'htm/preact';
import { usePoll } from '../api.js';
import { ms, tally, time } from '../format.js';
import { pulseColumns, span, type PulseJson, type PulseColumns } from '../pulse.js';
import { TimeChart } from '../timechart.js';

interface Replica {
  id: string;
  index: number;
  url: string;
  state: string;
  routable: boolean;
  last_probe: { at: string; ok: boolean; ms: number; error: string | null } | null;
  in_flight: { requests: number; inputs: number };
  last_error: string | null;
  consecutive_failures: number;
  ejections: number;
  ejected_until: string | null;
}
interface Backend {
  name: string;
  ready: boolean;
  routes: string[];
  replicas: Replica[];
  latency_ms?: { samples: number; p50: number | null; p95: number | null };
  outcomes?: Record<string, number>;
}
interface Route { name: string; kind: string; members: { backend: string; weight: number }[]; fallback: string[]; backends: { name: string; ready: boolean }[]; ready: boolean }
interface Agent { name: string; path: string; ready: boolean; routes: Route[] }

/** Why a replica is in its state, in words. */
function why(r: Replica): string {
  if (r.state === 'ejected') return `ejected until ${time(r.ejected_until)} after ${r.consecutive_failures} failures${r.last_error === null ? '' : `: ${r.last_error}`}`;
  if (r.state === 'ready') return r.consecutive_failures > 0 ? `${r.consecutive_failures} failures since the last success` : '';
  return r.last_error ?? r.last_probe?.error ?? (r.state === 'unknown' ? 'not probed yet' : '');
}

const errorsOf = (o: Record<string, number> | undefined): Record<string, number> =>
  Object.fromEntries(Object.entries(o ?? {}).filter(([k]) => k !== 'ok'));

function routesTable(routes: Route[]) {
  return html`<table><thead><tr><th>route</th><th>kind</th><th>members</th><th>fallback</th><th>can serve</th></tr></thead><tbody>
    ${routes.map((r) => html`<tr data-route=${r.name}>
      <td>${r.name}</td><td>${r.kind}</td>
      <td>${r.members.map((m) => html`<span class=${`badge ${r.backends.find((b) => b.name === m.backend)?.ready === true ? 'ok' : 'bad'}`}>${m.backend}${r.kind === 'backend' ? '' : ` ${m.weight}`}</span> `)}</td>
      <td>${r.fallback.join(', ') || '–'}</td>
      <td><span class=${`badge ${r.ready ? 'ok' : 'bad'}`} data-ready=${String(r.ready)}>${r.ready ? 'yes' : 'no'}</span></td></tr>`)}
  </tbody></table>`;
}

/** A backend's latency and failures over the last hour (the pulse). */
function backendCharts(name: string, cols: PulseColumns) {
  const b = cols.backend(name);
  return html`<div class="charts" data-backend-pulse=${name}>
    <div><div class="chart-title">Latency</div>
      <${TimeChart} name=${`latency-${name}`} t=${cols.t} unit="ms" height=${140} lines=${[
        { label: 'p50', values: b.latencyP50, stroke: '#2f5fd0' },
        { label: 'p95', values: b.latencyP95, stroke: '#9a6700' },
      ]} /></div>
    <div><div class="chart-title">Sub-requests and failures per second</div>
      <${TimeChart} name=${`failures-${name}`} t=${cols.t} unit="per s" height=${140} lines=${[
        { label: 'requests/s', values: b.requests, stroke: '#1a7f37' },
        { label: 'failures/s', values: b.failures, stroke: '#b42318' },
      ]} /></div>
  </div>`;
}

export function Backends(props: { onUnauthorized: () => void }) {
  const { data, error } = usePoll(
    ['/gateway/backends', '/gateway/routes', '/gateway/pulse'],
    ([b, r, p]) => ({ backends: (b as { backends: Backend[] }).backends, routes: (r as { routes: Route[]; agents: Agent[] }), pulse: p as PulseJson }), // the endpoints' documented shapes
    props.onUnauthorized,
  );
  if (data === undefined) return html`<p class="muted">${error ?? 'Loading…'}</p>`;
  const cols = pulseColumns(data.pulse);
  return html`<h2>Backends</h2>
    ${error === undefined ? null : html`<div class="banner error">${error}</div>`}
    ${data.backends.map((b) => html`<div class="card" data-backend=${b.name}>
      <h3>${b.name} <span class=${`badge ${b.ready ? 'ok' : 'bad'}`}>${b.ready ? 'ready' : 'not ready'}</span>
        <span class="muted normal"> · latency p50 ${ms(b.latency_ms?.p50)} · p95 ${ms(b.latency_ms?.p95)} · errors ${tally(errorsOf(b.outcomes))} · routes ${b.routes.join(', ') || '–'}</span></h3>
      <table><thead><tr><th>replica</th><th>state</th><th>why</th><th>last probe</th><th class="num">in flight</th><th class="num">ejections</th></tr></thead><tbody>
        ${b.replicas.map((r) => html`<tr data-replica=${r.id}>
          <td><code>${r.url}</code></td>
          <td><span class=${`badge state-${r.state}`} data-state=${r.state}>${r.state.replace('_', ' ')}</span></td>
          <td>${why(r)}</td>
          <td>${r.last_probe === null ? '–' : html`${time(r.last_probe.at)} ${r.last_probe.ok ? 'ok' : 'failed'} (${Math.round(r.last_probe.ms)} ms)`}</td>
          <td class="num">${r.in_flight.requests} req · ${r.in_flight.inputs} inputs</td>
          <td class="num">${r.ejections}</td></tr>`)}
      </tbody></table>
      <p class="muted small">Over time: ${span(data.pulse)}</p>
      ${backendCharts(b.name, cols)}</div>`)}
    <div class="card"><h3>Default agent's routes</h3>${data.routes.routes.length === 0 ? html`<p class="muted">none</p>` : routesTable(data.routes.routes)}</div>
    ${data.routes.agents.map((a) => html`<div class="card" data-agent=${a.name}><h3>Agent ${a.name} <code>${a.path}</code>
      <span class=${`badge ${a.ready ? 'ok' : 'bad'}`}>${a.ready ? 'can serve' : 'cannot serve'}</span></h3>${routesTable(a.routes)}</div>`)}`;
}
