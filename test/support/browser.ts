import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

export type BrowserFixture = {
  /** Debian's Chromium (`/usr/bin/chromium`), headless, driven by playwright-core. */
  readonly browser: Browser;
  /**
   * "Another site": `http://localhost:<port>`, while the API under test is served on 127.0.0.1 (another origin
   * and another site for the browser). It answers `pages.get(path)` as HTML, 404 otherwise.
   */
  readonly otherOrigin: string;
  readonly pages: Map<string, string>;
};

/** A browser and another site's server for a test file: started before its tests, closed after them. */
export function useBrowser(): BrowserFixture {
  let browser: Browser | undefined;
  let other: Server | undefined;
  let otherOrigin = '';
  const pages = new Map<string, string>();
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    other = createServer((req, res) => {
      const page = pages.get(req.url ?? '');
      res.writeHead(page ? 200 : 404, { 'content-type': 'text/html' }).end(page ?? 'not found');
    });
    await new Promise<void>((resolve) => other!.listen(0, '127.0.0.1', resolve));
    otherOrigin = `http://localhost:${(other.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (other ? other.close(() => resolve()) : resolve()));
  });
  return {
    get browser() {
      if (!browser) throw new Error('the browser is started in beforeAll: use it inside tests and hooks');
      return browser;
    },
    get otherOrigin() {
      return otherOrigin;
    },
    pages,
  };
}

/**
 * Every accessibility violation axe-core finds on the page as it is now. axe is injected as a script of the
 * page: open the page in a context with `bypassCSP: true`, or its own policy refuses it.
 */
export async function axeViolations(page: Page) {
  await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
  return (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) })))`)) as {
    id: string;
    impact: string;
    nodes: string[];
  }[];
}

/** The serious and critical violations of `axeViolations`: what no page of ours may have. */
export async function seriousAxeViolations(page: Page) {
  return (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
