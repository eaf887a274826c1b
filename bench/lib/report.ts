/** Rendering the bench results as Markdown (bench/results/latest.md, also printed). */
import { renderComparison } from './compare.js';
import type { BenchResults, ScenarioResult, TargetCheck } from './types.js';

function f(v: number | null | undefined, digits = 1): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return v.toFixed(digits);
}

function signed(v: number | undefined, digits = 1): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  return (v >= 0 ? '+' : '') + v.toFixed(digits);
}

/** S6-S8: one row per front process, its peak RSS against the bytes it held. */
function memoryTable(s: ScenarioResult): string[] {
  const lines = [
    '| target | peak RSS (VmHWM) MB | max sampled RSS MB | bytes in flight MB | peak / in flight | answers complete | largest answer MB | CPU ms/batch | s/wave |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const t of s.targets) {
    const m = t.memory;
    if (m === undefined) {
      lines.push(`| ${t.label} | not measured: ${(t.error ?? 'no data').split('\n')[0]!.slice(0, 160)} | | | | | | | |`);
      continue;
    }
    lines.push(
      `| ${t.label} | ${f(m.hwmMb, 0)} | ${f(m.rssMaxMb, 0)} | ${f(m.bytesInFlightMb, 1)} | ${f(m.hwmMb / m.bytesInFlightMb, 2)}x | ` +
        `${m.answered}/${m.answers} | ${f(m.answerMb, 1)} | ${f(m.cpuMsPerBatch, 1)} | ${f(m.waveS, 2)} |`,
    );
  }
  return lines;
}

/** ALLOC: one row per front process, its heap allocation and promotion per request. */
function allocTable(s: ScenarioResult): string[] {
  const lines = ['| target | KB allocated / request | KB promoted / request | scavenges | mark-compacts | requests |', '|---|---:|---:|---:|---:|---:|'];
  for (const t of s.targets) {
    const a = t.alloc;
    if (a === undefined) lines.push(`| ${t.label} | not measured: ${(t.error ?? 'no data').split('\n')[0]?.slice(0, 160) ?? ''} | | | | |`);
    else lines.push(`| ${t.label} | ${f(a.allocatedKbPerRequest, 1)} | ${f(a.promotedKbPerRequest, 2)} | ${a.scavenges} | ${a.markCompacts} | ${a.requests} |`);
  }
  return lines;
}

function scenarioTable(s: ScenarioResult): string[] {
  const lines: string[] = [];
  const params = Object.entries(s.params)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(', ');
  lines.push(`### ${s.id}: ${s.title}`, '', `_${params}_`, '');
  if (s.kind === 'memory' || s.kind === 'alloc') {
    lines.push(...(s.kind === 'memory' ? memoryTable(s) : allocTable(s)));
    for (const n of s.notes) lines.push('', `- ${n}`);
    lines.push('');
    return lines;
  }
  lines.push(
    '| target | req/s (min–max) | p50 ms | p99 ms | +p50 vs direct | +p99 vs direct | front CPU ms/batch | backend CPU ms/batch | loadgen CPU ms/batch | front peak RSS MB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const t of s.targets) {
    if (t.median === undefined) {
      lines.push(`| ${t.label} | not measured: ${(t.error ?? 'no data').split('\n')[0]!.slice(0, 160)} | | | | | | | | |`);
      continue;
    }
    const m = t.median;
    const spread = t.rounds.length > 1 ? ` (${f(m.rpsMin, 0)}–${f(m.rpsMax, 0)})` : '';
    lines.push(
      `| ${t.label} | ${f(m.rps, 0)}${spread} | ${f(m.p50, 2)} | ${f(m.p99, 2)} | ${t.role === 'direct' ? '' : signed(t.addedP50Ms, 2)} | ` +
        `${t.role === 'direct' ? '' : signed(t.addedP99Ms, 2)} | ${f(m.frontCpuMsPerBatch, 2)} | ${f(m.backendCpuMsPerBatch, 2)} | ${f(m.loadgenCpuMsPerBatch, 2)} | ${f(m.frontHwmMb, 0)} |`,
    );
  }
  const ratios = s.extra.ratios;
  if (ratios !== undefined && typeof ratios === 'object' && ratios !== null) {
    const parts = Object.entries(ratios as Record<string, number | null>).map(([k, v]) => `${k} ${f(v, 2)}`);
    if (parts.length > 0) lines.push('', `Ratios: ${parts.join(' · ')}`);
  }
  for (const n of s.notes) lines.push('', `- ${n}`);
  lines.push('');
  return lines;
}

function targetLine(t: TargetCheck): string {
  const value = t.value === null ? '–' : `${f(t.value, 2)}${t.unit}`;
  const limit = t.limit === null || t.op === 'info' ? '' : `${t.op} ${f(t.limit, 2)}${t.unit}`;
  return `| ${t.verdict === 'PASS' ? 'PASS' : t.verdict === 'FAIL' ? '**FAIL**' : t.verdict} | ${t.id} | ${t.description} | ${value} | ${limit} | ${t.detail} |`;
}

export function renderMarkdown(r: BenchResults): string {
  const m = r.meta;
  const lines: string[] = [];
  lines.push('# magma-gateway bench results', '');
  lines.push(
    `${m.date} · commit ${m.commit}${m.dirty ? ' (dirty tree)' : ''} · node ${m.node} · ${m.cpus} CPU (${m.cpuModel}) · ${f(m.memGb, 0)} GB · ` +
      `mode ${m.mode} · ${m.rounds} round(s) × ${m.durationS} s (+${m.warmupS} s warm-up) per target · gateway log_level ${m.gatewayLogLevel}` +
      `${Object.keys(m.gatewayExtra).length > 0 ? ` + ${JSON.stringify(m.gatewayExtra)}` : ''}` +
      `${m.gatewayNodeArgs.length > 0 ? ` (node ${m.gatewayNodeArgs.join(' ')})` : ''} · ` +
      `nginx ${m.nginx ?? 'not installed'} · load avg ${m.loadAvgStart.map((x) => x.toFixed(2)).join('/')} → ${m.loadAvgEnd.map((x) => x.toFixed(2)).join('/')} · ${f(m.wallS, 0)} s`,
    '',
  );
  lines.push('## Targets', '', '| verdict | id | target | measured | limit | detail |', '|---|---|---|---:|---:|---|');
  for (const t of r.targets) lines.push(targetLine(t));
  lines.push('');
  if (r.comparison !== undefined) lines.push(...renderComparison(r.comparison));
  if (r.harnessErrors.length > 0) {
    lines.push('## Harness errors', '');
    for (const e of r.harnessErrors) lines.push('```', e.slice(0, 2000), '```');
    lines.push('');
  }
  lines.push('## Scenarios', '');
  for (const s of r.scenarios) lines.push(...scenarioTable(s));
  if (r.floor !== undefined) {
    lines.push('### S5: JSON floor (in-process JSON.parse + JSON.stringify of S2 request and response)', '');
    if (r.floor.error !== undefined) lines.push(`not measured: ${r.floor.error}`, '');
    else {
      lines.push(
        `request ${f(r.floor.requestBytes / 1024, 0)} KB, response ${f(r.floor.responseBytes / 1024, 0)} KB: ` +
          `**${f(r.floor.cpuMs, 2)} CPU ms per batch** (wall ${f(r.floor.ms, 2)} ms)`,
        '',
        '| part | wall ms | CPU ms |',
        '|---|---:|---:|',
      );
      for (const p of r.floor.parts) lines.push(`| ${p.name} | ${f(p.ms, 2)} | ${f(p.cpuMs, 2)} |`);
      lines.push('');
    }
  }
  if (r.soak !== undefined) {
    const s = r.soak;
    lines.push(`### Soak: S1 + S2 together for ${f(s.seconds, 0)} s`, '');
    if (s.error !== undefined) lines.push(`not completed: ${s.error}`, '');
    else {
      lines.push(
        `gateway RSS after ${f(s.warmupS, 0)} s warm-up ${f(s.rssAfterWarmupMb, 0)} MB → end ${f(s.rssEndMb, 0)} MB ` +
          `(**${signed(s.growthPct, 1)}%**), peak ${f(s.peakMb, 0)} MB; S1 ${f(s.s1.rps, 0)} req/s p99 ${f(s.s1.p99, 1)} ms, ` +
          `S2 ${f(s.s2.rps, 1)} req/s p99 ${f(s.s2.p99, 0)} ms; non-2xx ${s.s1.non2xx + s.s2.non2xx}, errors ${s.s1.errors + s.s2.errors}` +
          (s.errorCandidates !== undefined ? `, error candidates ${s.errorCandidates}` : ''),
        '',
        `RSS series (s:MB): ${s.series.map(([t, v]) => `${t.toFixed(0)}:${v.toFixed(0)}`).join(' ')}`,
        '',
      );
    }
  }
  if (r.profiles !== undefined) {
    lines.push('## Gateway CPU profiles', '');
    for (const p of r.profiles) lines.push(`### ${p.scenario}`, '', p.summary, '');
  }
  lines.push(
    '## How to read this',
    '',
    '- Each target runs in its own process; the load generator (autocannon, closed loop) is another process. ' +
      'Rounds alternate the target order (forward, then reversed) and the table shows medians over rounds.',
    '- "front CPU ms/batch": utime+stime from /proc of the process in front of the backend (gateway, passthrough, nginx ' +
      'master+worker; for direct: the backend itself), divided by the batches completed in the measured phase.',
    '- "front peak RSS": VmHWM of that process over the scenario (a fresh process per scenario).',
    '- S6-S8 (memory): each front process is fresh for its target; a gated backend holds every batch of a wave in it at once; ' +
      '"bytes in flight" is the request bytes of one wave; "peak RSS" is VmHWM from start to the last answer.',
    '- All processes share the machine\'s cores; other load on the machine (see load avg) skews the figures.',
    '',
  );
  return lines.join('\n');
}
