/**
 * The console (docs/console.md): a page on the admin listener showing what `/gateway/*` answers, refreshed every
 * few seconds. Hash routing (#/overview, #/backends, #/experiments, #/batches), so the gateway serves one page.
 */
import { render } from 'preact';
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { forgetToken, getJson, saveToken, savedToken, Unauthorized } from './api.js';
import { Overview } from './pages/overview.js';
import { Backends } from './pages/backends.js';
import { Experiments } from './pages/experiments.js';
import { Batches } from './pages/batches.js';

const PAGES = [
  { hash: 'overview', title: 'Overview', view: Overview },
  { hash: 'backends', title: 'Backends', view: Backends },
  { hash: 'experiments', title: 'Experiments', view: Experiments },
  { hash: 'batches', title: 'Recent batches', view: Batches },
] as const;

function currentHash(): string {
  const h = location.hash.replace(/^#\/?/, '');
  return PAGES.some((p) => p.hash === h) ? h : 'overview';
}

function TokenPrompt(props: { wrong: boolean; onToken: (t: string) => void }) {
  const [value, setValue] = useState('');
  return html`<div class="card login">
    <h2>Admin token</h2>
    <p class="muted">This gateway's admin listener is protected by <code>admin.token</code>. The token is kept for this tab only.</p>
    ${props.wrong ? html`<div class="banner error" role="alert">That token was refused.</div>` : null}
    <form onSubmit=${(e: Event) => { e.preventDefault(); if (value !== '') props.onToken(value); }}>
      <label for="token">Token</label>
      <input id="token" name="token" type="password" autocomplete="off" value=${value} onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)} />
      <button type="submit">Open the console</button>
    </form>
  </div>`;
}

type Access = 'checking' | 'open' | 'needs-token' | 'wrong-token';

function App() {
  const [page, setPage] = useState(currentHash());
  const [access, setAccess] = useState<Access>('checking');
  useEffect(() => {
    const onHash = (): void => setPage(currentHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    if (access !== 'checking') return;
    getJson('/gateway/').then(
      () => setAccess('open'),
      (err: unknown) => {
        if (!(err instanceof Unauthorized)) return setAccess('open'); // the pages show the error themselves
        const had = savedToken() !== null;
        forgetToken();
        setAccess(had ? 'wrong-token' : 'needs-token');
      },
    );
  }, [access]);
  const unauthorized = (): void => {
    forgetToken();
    setAccess('wrong-token');
  };
  const View = PAGES.find((p) => p.hash === page)?.view ?? Overview;
  return html`
    <header>
      <h1>magma-gateway</h1>
      <nav>${PAGES.map((p) => html`<a href=${`#/${p.hash}`} class=${p.hash === page ? 'active' : ''}>${p.title}</a>`)}</nav>
    </header>
    <main>
      ${access === 'checking' ? html`<p class="muted">Connecting…</p>` : null}
      ${access === 'needs-token' || access === 'wrong-token'
        ? html`<${TokenPrompt} wrong=${access === 'wrong-token'} onToken=${(t: string) => { saveToken(t); setAccess('checking'); }} />`
        : null}
      ${access === 'open' ? html`<${View} onUnauthorized=${unauthorized} />` : null}
    </main>`;
}

render(html`<${App} />`, document.getElementById('app')!); // index.html has #app
