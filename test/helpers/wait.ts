/** Waiting for a server started as a separate process, as a user would: poll its /health. */
export async function waitHealthy(url: string, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} never became healthy`);
}
