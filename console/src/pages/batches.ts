/**
 * Recent batches (GET /gateway/batches): ids, counts, names and codes only. A row opens its batch
 * (GET /gateway/batches/<seq>): each input's id, route, arm, backend, status, whether the cache served it, and
 * its error code; never agent data.
 */
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { getJson, Unauthorized, usePoll } from '../api.js';
import { ms, tally, time } from '../format.js';

interface Batch {
  seq: number; at: string; request_id: string; agent: string; client: string | null; inputs: number; candidates: number;
  routes: Record<string, number>; backends: Record<string, number>; error_codes: Record<string, number>; duration_ms: number; overhead_ms: number;
  streamed: boolean; cache_hits: number | null;
}
interface InputRow { id: string; route: string | null; arm: string | null; backend: string | null; candidates: number; status: string | null; cached: boolean; error_code: string | null }

const short = (id: string): string => (id.length > 14 ? `${id.slice(0, 12)}…` : id);

function BatchInputs(props: { seq: number; inputs: number; onUnauthorized: () => void }) {
  const [rows, setRows] = useState<InputRow[] | string | undefined>();
  useEffect(() => {
    getJson(`/gateway/batches/${props.seq}`).then(
      (j) => setRows((j as { input_rows: InputRow[] }).input_rows), // the endpoint's documented shape
      (err: unknown) => (err instanceof Unauthorized ? props.onUnauthorized() : setRows(err instanceof Error ? err.message : String(err))),
    );
  }, [props.seq]);
  if (rows === undefined) return html`<p class="muted">Loading…</p>`;
  if (typeof rows === 'string') return html`<p class="muted">${rows}</p>`;
  return html`<table class="inputs" data-inputs=${props.seq}><thead><tr><th>input id</th><th>route</th><th>arm</th><th>backend</th><th class="num">candidates</th><th>status</th><th>cache</th><th>error code</th></tr></thead><tbody>
    ${rows.map((r) => html`<tr data-input=${r.id}><td><code>${r.id}</code></td><td>${r.route ?? '–'}</td><td>${r.arm ?? '–'}</td><td>${r.backend ?? '–'}</td>
      <td class="num">${r.candidates}</td><td>${r.status === null ? html`<span class="muted">streamed</span>` : html`<span class=${`badge ${r.status === 'completed' ? 'ok' : 'bad'}`}>${r.status}</span>`}</td>
      <td>${r.cached ? html`<span class="badge info" data-cached>served from cache</span>` : '–'}</td><td>${r.error_code === null ? '–' : html`<code>${r.error_code}</code>`}</td></tr>`)}
    </tbody></table>
    ${rows.length < props.inputs ? html`<p class="muted small">The first ${rows.length} of ${props.inputs} inputs (admin.batch_inputs_kept).</p>` : null}`;
}

export function Batches(props: { onUnauthorized: () => void }) {
  const { data, error } = usePoll(['/gateway/batches'], ([j]) => j as { capacity: number; batches: Batch[] }, props.onUnauthorized); // the endpoint's documented shape
  const [open, setOpen] = useState<number | undefined>();
  if (data === undefined) return html`<p class="muted">${error ?? 'Loading…'}</p>`;
  return html`<h2>Recent batches <span class="muted small normal">the last ${data.capacity} kept (admin.recent_batches), newest first; a row opens its inputs</span></h2>
    ${error === undefined ? null : html`<div class="banner error">${error}</div>`}
    <div class="card">${data.batches.length === 0 ? html`<p class="muted">No batch yet.</p>` : html`<table class="batches">
      <thead><tr><th>time</th><th>request_id</th><th>agent</th><th>client</th><th class="num">inputs</th><th class="num">candidates</th><th>routes</th><th>backends</th><th class="num">cache hits</th><th>error codes</th><th class="num">duration</th><th class="num">overhead</th></tr></thead>
      <tbody>${data.batches.map((b) => html`<tr data-batch=${b.request_id} data-seq=${b.seq} class=${`clickable${open === b.seq ? ' open' : ''}`} onClick=${() => setOpen(open === b.seq ? undefined : b.seq)}>
        <td>${time(b.at)}</td><td title=${b.request_id}><code>${short(b.request_id)}</code>${b.streamed ? html` <span class="badge info" data-streamed>streamed</span>` : null}</td><td>${b.agent}</td><td>${b.client ?? '–'}</td>
        <td class="num">${b.inputs}</td><td class="num">${b.candidates}</td><td>${tally(b.routes)}</td><td>${tally(b.backends)}</td>
        <td class="num" data-cache-hits=${b.cache_hits ?? ''}>${b.cache_hits === null ? '–' : b.cache_hits}${b.cache_hits !== null && b.cache_hits > 0 && b.cache_hits === b.inputs ? html` <span class="badge info">served from cache</span>` : null}</td>
        <td>${Object.keys(b.error_codes).length === 0 ? '–' : html`<span class="badge bad">${tally(b.error_codes)}</span>`}</td>
        <td class="num" data-duration=${b.duration_ms}>${ms(b.duration_ms)}</td><td class="num" data-overhead=${b.overhead_ms}>${ms(b.overhead_ms)}</td></tr>
        ${open === b.seq ? html`<tr class="detail"><td colspan="12"><${BatchInputs} seq=${b.seq} inputs=${b.inputs} onUnauthorized=${props.onUnauthorized} /></td></tr>` : null}`)}</tbody></table>`}</div>`;
}
