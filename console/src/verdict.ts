/**
 * The verdict an experiment's card opens with: the report's `verdict` (state, better arm, sentence) in words a
 * researcher acts on, colour-coded by state, with each arm's progress toward the burn-in while it collects. The
 * sentence is the report's own (its leading state name left out, the headline says it); the headline names the
 * state and the winner so it reads at a glance. Under a sample-ratio mismatch the verdict is the banner: its
 * sentence holds the counts, the p-value and the cause, said once.
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

/** The report's sentence without the state it starts with ("collecting: 14 more ..."), capitalised. */
function sentence(v: Verdict): string {
  const t = v.text.replace(/^(collecting|keep running|not trustworthy|planned size reached):\s*/i, '');
  return t === '' ? t : `${t[0]!.toUpperCase()}${t.slice(1)}${/[.!]$/.test(t) ? '' : '.'}`; // t is not empty
}

export function VerdictCard(props: { e: Experiment }) {
  const v = props.e.verdict;
  if (v === null) return null;
  const p = v.progress;
  const least = p?.[0];
  const srm = v.state === 'not_trustworthy' && props.e.srm?.flagged === true;
  return html`<div class=${`verdict ${TONE[v.state]}`} data-verdict=${v.state} data-arm=${v.arm ?? ''} role=${v.state === 'not_trustworthy' ? 'alert' : undefined}
      data-srm=${srm ? 'flagged' : undefined}>
    <div class="headline">${HEADLINE[v.state](v)}</div>
    ${v.text === '' ? null : html`<div class="text" data-verdict-text>${sentence(v)}</div>`}
    ${p === null || least === undefined
      ? null
      : html`<div class="progress" data-progress=${`${least.have}/${least.need}`}>
          ${p.map((a) => html`<div class="arm-progress"><span class="arm">${a.arm}</span><progress max=${a.need} value=${Math.min(a.have, a.need)}></progress>
            <span class="muted">${a.have} of ${a.need} ${a.unit}</span></div>`)}
        </div>`}
  </div>`;
}

/** Whether the comparisons can be read as results: not under a flagged SRM or a not_trustworthy verdict. */
export function trustworthy(e: Experiment): boolean {
  return e.trustworthy && e.verdict?.state !== 'not_trustworthy' && e.srm?.flagged !== true;
}

/** The verdict says the SRM itself (its cause included): no second banner for it. */
export function verdictIsBanner(e: Experiment): boolean {
  return e.verdict?.state === 'not_trustworthy' && e.srm?.flagged === true;
}
