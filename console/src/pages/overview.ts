/** Overview: the gateway itself (GET /gateway/overview). */
import { html } from 'htm/preact';
import { usePoll } from '../api.js';
import { duration, ms, time } from '../format.js';

interface OverviewJson {
  version: string;
  uptime_s: number;
  listeners: { agent: string | null; admin: string | null };
  store: { kind: string; up: boolean; fallbacks: number };
  config: { path: string | null; last_reload: { at: string; trigger: string; ok: boolean; detail: string | null } | null };
  batches: { per_second: number; in_flight: number };
  error_candidates: Record<string, number>;
  overhead_ms: { samples: number; p50: number | null; p99: number | null };
}

/** A figure; `text` for a long value (an address, a path) written smaller. */
const stat = (label: string, value: unknown, sub?: unknown, id?: string, text = false) =>
  html`<div class=${text ? 'stat text' : 'stat'} data-stat=${id ?? label}><div class="label">${label}</div><div class="value">${value}</div>${sub === undefined ? null : html`<div class="sub">${sub}</div>`}</div>`;

export function Overview(props: { onUnauthorized: () => void }) {
  const { data, error } = usePoll(['/gateway/overview'], ([o]) => o as OverviewJson, props.onUnauthorized); // the endpoint's documented shape
  if (data === undefined) return html`<p class="muted">${error ?? 'Loading…'}</p>`;
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
    </div>
    <div class="card" style="margin-top:16px">
      <h3>Error candidates by code (since start)</h3>
      ${codes.length === 0
        ? html`<p class="muted" data-empty="errors">No error candidates.</p>`
        : html`<table><thead><tr><th>code</th><th class="num">candidates</th></tr></thead><tbody>
            ${codes.map(([c, n]) => html`<tr><td><code>${c}</code></td><td class="num">${n}</td></tr>`)}</tbody></table>`}
    </div>`;
}
