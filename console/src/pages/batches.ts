/** Recent batches (GET /gateway/batches): counts, names and codes only. */
import { html } from 'htm/preact';
import { usePoll } from '../api.js';
import { ms, tally, time } from '../format.js';

interface Batch {
  at: string; request_id: string; agent: string; client: string | null; inputs: number; candidates: number;
  routes: Record<string, number>; backends: Record<string, number>; error_codes: Record<string, number>; duration_ms: number; overhead_ms: number;
}

const short = (id: string): string => (id.length > 14 ? `${id.slice(0, 12)}…` : id);

export function Batches(props: { onUnauthorized: () => void }) {
  const { data, error } = usePoll(['/gateway/batches'], ([j]) => j as { capacity: number; batches: Batch[] }, props.onUnauthorized); // the endpoint's documented shape
  if (data === undefined) return html`<p class="muted">${error ?? 'Loading…'}</p>`;
  return html`<h2>Recent batches <span class="muted" style="font-size:13px;font-weight:normal">the last ${data.capacity} kept (admin.recent_batches), newest first</span></h2>
    ${error === undefined ? null : html`<div class="banner error">${error}</div>`}
    <div class="card">${data.batches.length === 0 ? html`<p class="muted">No batch yet.</p>` : html`<table>
      <thead><tr><th>time</th><th>request_id</th><th>agent</th><th>client</th><th class="num">inputs</th><th class="num">candidates</th><th>routes</th><th>backends</th><th>error codes</th><th class="num">duration</th><th class="num">overhead</th></tr></thead>
      <tbody>${data.batches.map((b) => html`<tr data-batch=${b.request_id}>
        <td>${time(b.at)}</td><td title=${b.request_id}><code>${short(b.request_id)}</code></td><td>${b.agent}</td><td>${b.client ?? '–'}</td>
        <td class="num">${b.inputs}</td><td class="num">${b.candidates}</td><td>${tally(b.routes)}</td><td>${tally(b.backends)}</td>
        <td>${Object.keys(b.error_codes).length === 0 ? '–' : html`<span class="badge bad">${tally(b.error_codes)}</span>`}</td>
        <td class="num">${ms(b.duration_ms)}</td><td class="num">${ms(b.overhead_ms)}</td></tr>`)}</tbody></table>`}</div>`;
}
