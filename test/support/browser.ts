import { mkdirSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { OPERATOR_TOKEN } from './stack';

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

/**
 * Where the pages' screenshots go: a temporary folder, or with `UPDATE_SCREENSHOTS=1` docs/screenshots/ (so a
 * test run leaves the checkout as it was).
 */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS
  ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
  : `${mkdtempSync(join(tmpdir(), 'stampcard-screenshots-'))}/`;

/**
 * The page as it is now, at 1280 and at 390 px wide: no serious or critical axe-core violation at either
 * (the context needs `bypassCSP: true`), nothing wider than the window at 390 but the tables' own scrolling
 * boxes, and a screenshot of each, `<name>-1280.png` and `<name>-390.png`. The page is left at 1280.
 */
export async function checkAtBothWidths(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  expect(await seriousAxeViolations(page), `${name} at 1280`).toEqual([]);
  await page.screenshot({ path: `${SCREENSHOTS}${name}-1280.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(100);
  expect(await seriousAxeViolations(page), `${name} at 390`).toEqual([]);
  expect(await page.evaluate('document.documentElement.scrollWidth'), `${name} at 390`).toBeLessThanOrEqual(
    390,
  );
  await page.screenshot({ path: `${SCREENSHOTS}${name}-390.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** Signs in through the console's form, as an operator does: its first page is the sign-in page. */
export async function signInToConsole(page: Page, api: string) {
  await page.goto(`${api}/console`);
  expect(new URL(page.url()).pathname).toBe('/console/sign-in');
  await page.getByLabel('Operator token').fill(OPERATOR_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}
