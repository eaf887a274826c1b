/**
 * Experiments: per agent and route, the arms, each arm's rate with its interval, the comparisons with their fixed
 * and always-valid intervals, the SRM banner, strata, the history chart and the per-trajectory export. Reads the
 * report through report.ts only.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { download, Unauthorized, usePoll } from '../api.js';
import { DifferenceChart } from '../chart.js';
import { ci, ms, pct, pp, pValue, tally, time } from '../format.js';
import { historySeries, normalizeFinals, normalizeReport, type Arm, type Comparison, type Experiment, type Report } from '../report.js';
import { trustworthy, VerdictCard, verdictIsBanner } from '../verdict.js';

function armsTable(arms: Arm[], control: string | null) {
  return html`<table class="arms"><thead><tr><th>arm</th><th class="num">weight</th><th class="num">trajectories</th><th class="num">steps</th>
    <th>tool success (95% CI)</th><th>outcome (95% CI)</th><th class="num">latency p50 / p95</th><th>error codes</th></tr></thead><tbody>
    ${arms.map((a) => html`<tr data-arm=${a.arm}>
      <td>${a.arm}${a.arm === control ? html` <span class="muted">(control)</span>` : null}${a.member ? null : html` <span class="badge warn">not a member</span>`}</td>
      <td class="num">${a.weight ?? '–'}</td>
      <td class="num" data-trajectories=${a.trajectories}>${a.trajectories}</td>
      <td class="num">${a.steps}</td>
      <td>${pct(a.toolSuccess.rate)} ${ci(a.toolSuccess.ci95, (x) => pct(x))} <span class="muted">${a.toolSuccess.of}</span></td>
      <td>${a.outcomes === null ? '–' : html`${pct(a.outcomes.rate)} ${ci(a.outcomes.ci95, (x) => pct(x))} <span class="muted">${a.outcomes.of}</span>`}</td>
      <td class="num">${ms(a.latency.p50)} / ${ms(a.latency.p95)}</td>
      <td>${tally(a.errorCodes)}</td></tr>`)}
  </tbody></table>`;
}

function comparisonsTable(cs: Comparison[], trusted: boolean) {
  if (cs.length === 0) return html`<p class="muted">No comparison (an ensemble, or a single arm).</p>`;
  return html`<table class="comparisons"><thead><tr><th>comparison</th><th>metric</th><th class="num">difference</th>
    <th>fixed 95% CI</th><th>always-valid 95% CI</th></tr></thead><tbody>
    ${cs.map((c) => html`<tr data-comparison=${`${c.arm}-${c.control}`}>
      <td>${c.arm} − ${c.control}${c.primary ? html` <span class=${`badge ${trusted ? 'ok' : 'muted-badge'}`} data-primary>primary</span>` : null}${trusted ? null : html` <span class="badge bad" data-untrustworthy>not trustworthy</span>`}</td>
      <td>${c.metric}${c.label === null ? null : html`<div class="muted">${c.label}</div>`}</td>
      <td class="num">${pp(c.fixed?.difference ?? c.sequential?.difference)}</td>
      <td>${c.fixed === null ? html`<span class="muted">${c.fixedReason ?? '–'}</span>` : html`${ci(c.fixed.ci95, pp)} <span class="muted">${pValue(c.fixed.pValue)}</span>`}</td>
      <td>${c.sequential === null ? html`<span class="muted">${c.sequentialReason ?? '–'}</span>` : html`${ci(c.sequential.ci95, pp)} <span class="muted">${pValue(c.sequential.pValue)}</span>`}</td></tr>`)}
  </tbody></table>`;
}

/** The SRM banner: the report's own sentence once (it holds the counts, the p-value and the cause). */
function srmBanner(e: Experiment) {
  if (e.srm?.flagged !== true || verdictIsBanner(e)) return null;
  const { cause } = e.srm;
  const own = e.warnings[0] === undefined ? undefined : e.warnings[0] + (cause === null || e.warnings[0].includes(cause) ? '' : `; cause: ${cause}`);
  const text =
    own ??
    `the arms did not get the traffic their weights ask for: observed ${tally(e.srm.observed)}, expected ${tally(Object.fromEntries(Object.entries(e.srm.expected).map(([k, v]) => [k, Math.round(v)])))} (${pValue(e.srm.pValue)})${cause === null ? '' : `; cause: ${cause}`}. The comparison is not trustworthy`;
  const rest = text.replace(/^sample[- ]ratio mismatch:?\s*/i, '');
  return html`<div class="banner srm" role="alert" data-srm="flagged"><strong>Sample ratio mismatch</strong>${rest.startsWith('(') ? ' ' : ': '}${rest}${/[.!]$/.test(rest) ? '' : '.'}</div>`;
}

function ExperimentCard(props: { e: Experiment; history: unknown; onUnauthorized: () => void; earlier?: boolean }) {
  const { e } = props;
  const trusted = trustworthy(e);
  const [downloadError, setDownloadError] = useState<string | undefined>();
  const primary = e.comparisons.find((c) => c.primary) ?? e.comparisons[0];
  const series = historySeries(props.history, e, primary?.arm);
  const save = (): void => {
    const q = new URLSearchParams({ agent: e.agent, route: e.route });
    download(`/gateway/experiments/trajectories?${q.toString()}`, `trajectories-${e.agent}-${e.route}.jsonl`).then(
      () => setDownloadError(undefined),
      (err: unknown) => (err instanceof Unauthorized ? props.onUnauthorized() : setDownloadError(err instanceof Error ? err.message : String(err))),
    );
  };
  return html`<div class="card experiment" data-experiment=${`${e.agent}/${e.route}`}>
    <h3>${e.agent === 'default' ? '' : `${e.agent} · `}route ${e.route} <span class="muted normal">${e.kind}${e.name === null ? '' : ` · ${e.name}`}${e.id === null ? '' : ` · id ${e.id}`}${e.startedAt === null ? '' : ` · since ${time(e.startedAt)}`}${e.endedAt === null ? '' : ` · ended ${time(e.endedAt)}`}${e.unit === null ? '' : ` · unit ${e.unit}`}</span></h3>
    <${VerdictCard} e=${e} />
    ${srmBanner(e)}
    ${e.warnings.filter((_, i) => !(i === 0 && e.srm?.flagged === true)).map((w) => html`<div class="banner warn" data-warning>${w}</div>`)}
    ${armsTable(e.arms, e.control)}
    <h3>Comparisons</h3>
    ${comparisonsTable(e.comparisons, trusted)}
    ${e.strata === null || e.strata.values.length === 0 ? null : html`<h3>Strata by <code>${e.strata.by}</code></h3>
      <table><thead><tr><th>value</th><th>trajectories per arm</th><th>difference (fixed 95% CI)</th></tr></thead><tbody>
      ${e.strata.values.map((s) => html`<tr data-stratum=${s.value}><td>${s.value}</td><td>${tally(Object.fromEntries(s.arms.map((a) => [a.arm, a.trajectories])))}</td>
        <td>${s.comparisons.map((c) => html`<div>${c.arm} − ${c.control}: ${pp(c.fixed?.difference)} ${ci(c.fixed?.ci95 ?? null, pp)}</div>`)}</td></tr>`)}</tbody></table>`}
    ${primary === undefined ? null : html`<h3>${primary.arm} − ${primary.control} over time</h3>
      ${!series.difference.some((d, i) => d !== null || series.fixedLo[i] !== null || series.seqLo[i] !== null)
        ? html`<p class="muted" data-chart="empty">No result yet: the first point is drawn as soon as the report has one, then one every experiments.snapshot_interval_s.</p>`
        : html`<${DifferenceChart} series=${series} label=${primary.metric} />`}`}
    ${props.earlier === true ? null : html`<p><button class="link" onClick=${save} data-download="trajectories">Download the per-trajectory export</button>
      ${downloadError === undefined ? null : html` <span class="muted">${downloadError}</span>`}</p>`}
  </div>`;
}

/** What a config needs for the page to have something to show, and where the docs are. */
const EMPTY = `routes:
  - name: ab
    split: { talker: 50, actor: 50 }   # two backends, half the new trajectories each
    experiment: { name: spring-run }   # optional`;

function Empty() {
  return html`<div class="card" data-empty="experiments">
    <p>No split or ensemble route in the running config: an experiment is a route that divides traffic between backends. For example:</p>
    <pre><code>${EMPTY}</code></pre>
    <p>See <a href="experiments.md" target="_blank" rel="noopener">Experiments</a> (the gateway's docs/experiments.md, served here) for running one, its outcomes and when to stop.</p>
  </div>`;
}

function EarlierList(props: { report: Report; finals: Map<string, Experiment>; history: unknown; onUnauthorized: () => void }) {
  const [open, setOpen] = useState<string | undefined>();
  const shown = open === undefined ? undefined : props.finals.get(open);
  return html`<div class="card"><h3>Earlier experiments</h3><table><thead><tr><th>agent</th><th>route</th><th>experiment</th><th>ended</th><th>trajectories</th><th>verdict</th><th></th></tr></thead><tbody>
    ${props.report.earlier.map((x) => {
      const f = x.id === null ? undefined : props.finals.get(x.id);
      return html`<tr data-earlier=${x.id ?? ''}><td>${x.agent}</td><td>${x.route}</td><td>${x.name ?? x.id ?? '–'}</td><td>${time(x.endedAt)}</td>
        <td>${tally(Object.fromEntries(x.arms.map((a) => [a.arm, a.trajectories])))}</td>
        <td>${f?.verdict == null ? html`<span class="muted">${f === undefined ? 'no final report kept' : '–'}</span>` : f.verdict.state.replace(/_/g, ' ')}</td>
        <td>${f === undefined ? null : html`<button class="link" data-open-earlier=${x.id} onClick=${() => setOpen(open === x.id ? undefined : (x.id ?? undefined))}>${open === x.id ? 'close' : 'open'}</button>`}</td></tr>`;
    })}</tbody></table>
    ${shown === undefined ? null : html`<${ExperimentCard} key=${shown.id} e=${shown} history=${props.history} onUnauthorized=${props.onUnauthorized} earlier=${true} />`}
  </div>`;
}

export function Experiments(props: { onUnauthorized: () => void }) {
  const { data, error } = usePoll(
    ['/gateway/experiments', '/gateway/experiments/history', '/gateway/experiments/earlier'],
    ([r, h, f]): { report: Report; history: unknown; finals: Map<string, Experiment> } => ({ report: normalizeReport(r), history: h, finals: normalizeFinals(f) }),
    props.onUnauthorized,
  );
  if (data === undefined) return html`<p class="muted">${error ?? 'Loading…'}</p>`;
  const { report } = data;
  return html`<h2>Experiments <span class="muted small normal">${report.store === 'redis' ? 'cluster-wide (Redis)' : "this replica's counts"}</span></h2>
    ${error === undefined ? null : html`<div class="banner error">${error}</div>`}
    ${report.experiments.length === 0 ? html`<${Empty} />` : null}
    ${report.experiments.map((e) => html`<${ExperimentCard} key=${`${e.agent}/${e.route}`} e=${e} history=${data.history} onUnauthorized=${props.onUnauthorized} />`)}
    ${report.earlier.length === 0 ? null : html`<${EarlierList} report=${report} finals=${data.finals} history=${data.history} onUnauthorized=${props.onUnauthorized} />`}`;
}
