/**
 * The verdict an experiment's card opens with: the report's `verdict` (state, better arm, sentence) in words a
 * researcher acts on, colour-coded by state, with the progress toward the burn-in while the experiment collects.
 * The sentence is the report's own; the headline only names the state (and the winner) so it reads at a glance.
 */
import { html } from 'htm/preact';
import type { Experiment, Verdict } from './report.js';

const HEADLINE: Record<Verdict['state'], (v: Verdict) => string> = {
  collecting: () => 'Collecting: too early to compare',
  keep_running: () => 'Keep running: no difference shown yet',
  arms_differ: (v) => (v.arm === null ? 'The arms differ: you may stop' : `${v.arm} is better: you may stop`),
  planned_size_reached: () => 'Planned size reached: you may stop, the arms did not differ',
  not_trustworthy: () => 'Not trustworthy: do not act on this comparison',
};

/** Colour class per state (style.css). */
const TONE: Record<Verdict['state'], string> = {
  collecting: 'info',
  keep_running: 'warn',
  arms_differ: 'ok',
  planned_size_reached: 'info',
  not_trustworthy: 'bad',
};

export function VerdictCard(props: { e: Experiment }) {
  const v = props.e.verdict;
  if (v === null) return null;
  const p = v.progress;
  const share = p === null ? 0 : Math.max(0, Math.min(1, p.done / p.of));
  return html`<div class=${`verdict ${TONE[v.state]}`} data-verdict=${v.state} data-arm=${v.arm ?? ''}>
    <div class="headline">${HEADLINE[v.state](v)}</div>
    ${v.text === '' ? null : html`<div class="text" data-verdict-text>${v.text}</div>`}
    ${p === null
      ? null
      : html`<div class="progress" data-progress=${`${p.done}/${p.of}`}>
          <progress max=${p.of} value=${Math.min(p.done, p.of)}></progress>
          <span class="muted">${p.what === '%' ? `${p.done}%` : `${p.done} of ${p.of}${p.what === null ? '' : ` ${p.what}`}`} (${Math.round(share * 100)}%)</span>
        </div>`}
  </div>`;
}

/** Whether the comparisons can be read as results: not under a flagged SRM or a not_trustworthy verdict. */
export function trustworthy(e: Experiment): boolean {
  return e.trustworthy && e.verdict?.state !== 'not_trustworthy' && e.srm?.flagged !== true;
}
