import { createStampcardClient } from '@stampcard/client';
import type { BrowserContext } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkAtBothWidths, signInToConsole, useBrowser } from '../../../test/support/browser';
import { client, operatorProgram, overHttp } from '../../../test/support/client';
import { TEST_RATE_LIMITS } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * The webhook pages in a real browser: the operator follows a failing delivery to its attempts and replays it
 * from the console; a business opens its portal link (asked for with the typed client) and sees its own
 * deliveries only, embedded in a page of an origin its account allows; an altered link shows nothing; every
 * page checked by axe-core at both widths (its screenshots: see `checkAtBothWidths`).
 */
const stack = useTestStack({ http: true, dispatcher: true });
const startReceiver = useReceivers();
const site = useBrowser();
let api = '';

beforeAll(() => {
  api = stack.baseUrl!;
});

const op = () => client(overHttp(api), OPERATOR_TOKEN);

async function withContext<T>(run: (c: BrowserContext) => Promise<T>, bypassCSP = true) {
  const context = await site.browser.newContext({ bypassCSP, viewport: { width: 1280, height: 900 } });
  try {
    return await run(context);
  } finally {
    await context.close();
  }
}

/** A program whose endpoint's receiver fails until told otherwise, with one test message sent to it. */
async function failingProgram(name: string) {
  const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
  await op().patch(`/admin/v1/accounts/${p.accountId}`, { name });
  const state = { failing: true };
  const receiver = await startReceiver(() =>
    state.failing ? { status: 500, body: 'database is read-only' } : { status: 200 },
  );
  const endpoint = await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
    url: receiver.url,
  });
  expect(endpoint.status).toBe(200);
  const test = await op().post(`/admin/v1/webhook-endpoints/${endpoint.body.id}/test`);
  return {
    ...p,
    receiver,
    state,
    endpointId: endpoint.body.id as string,
    messageId: test.body.messageId as string,
  };
}

describe('the webhook pages in a browser', () => {
  it("console: a failing receiver's message shows its attempts, is replayed from the page and arrives", async () => {
    const p = await failingProgram('Browser webhooks');
    await p.receiver.waitFor(4); // the first attempt and its three quick retries
    await withContext(async (context) => {
      const page = await context.newPage();
      await signInToConsole(page, api);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('link', { name: 'Event types and example bodies' }).click();
      await page.getByRole('heading', { level: 2, name: 'PARTICIPANT_REACHED_A_GOAL' }).waitFor();
      await checkAtBothWidths(page, 'console-event-types');
      await page.goto(`${api}/console/webhooks?accountId=${p.accountId}`);
      await page.getByRole('img', { name: /Last 24 hours: 0 delivered, 1 failed/ }).waitFor();
      await checkAtBothWidths(page, 'console-webhooks');
      await page.getByRole('link', { name: p.receiver.url }).click();
      await page.getByLabel('Status', { exact: true }).selectOption('FAILED');
      await page.getByRole('button', { name: 'Filter', exact: true }).click();
      await page.getByRole('cell', { name: 'WEBHOOK_TEST' }).waitFor();
      await checkAtBothWidths(page, 'console-endpoint');
      await page.locator(`a[href$="/messages/${p.messageId}"]`).click();
      await page.getByText('database is read-only').first().waitFor();
      expect(await page.getByText('HTTP 500').count()).toBe(4);
      await checkAtBothWidths(page, 'console-message');

      p.state.failing = false;
      await page.getByRole('button', { name: 'Replay this message' }).click();
      await page.getByRole('status').getByText('The message will be delivered again.').waitFor();
      await p.receiver.waitFor(5);
      expect(p.receiver.received[4]!.headers['webhook-id']).toBe(p.messageId);
      await expect
        .poll(async () => {
          await page.reload();
          return page.locator('dd', { hasText: 'SUCCEEDED' }).count();
        })
        .toBe(1);
    });
  }, 90_000);

  it("portal: a business's link shows its own deliveries only, framed by its own origin; an altered link shows nothing", async () => {
    const mine = await failingProgram('Portal business');
    const theirs = await failingProgram('Another business');
    await mine.receiver.waitFor(4);
    const typed = createStampcardClient({ baseUrl: api, apiKey: mine.key });
    const session = await typed.POST('/v1/portal-sessions', { body: { expiresInSeconds: 600 } });
    expect(session.response.status).toBe(200);
    const url = session.data!.url!;

    await withContext(async (context) => {
      const page = await context.newPage();
      await page.goto(url);
      await page.getByRole('heading', { level: 1, name: 'Webhooks: Portal business' }).waitFor();
      expect(await page.getByText(theirs.receiver.url).count()).toBe(0);
      await checkAtBothWidths(page, 'portal');
      await page.getByRole('link', { name: mine.receiver.url }).click();
      await page.locator(`a[href$="/messages/${mine.messageId}"]`).click();
      await page.getByText('database is read-only').first().waitFor();
      await checkAtBothWidths(page, 'portal-message');
      // Another account's message, by its id through this link: nothing of it.
      const other = await page.goto(url.replace(/$/, `/webhooks/messages/${theirs.messageId}`));
      expect(other!.status()).toBe(404);
      expect(await page.content()).not.toContain(theirs.receiver.url);

      const altered = url.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
      const refused = await page.goto(altered);
      expect(refused!.status()).toBe(401);
      await page.getByRole('heading', { name: 'This portal link is not valid' }).waitFor();
      expect(await page.content()).not.toContain(mine.receiver.url);
      await checkAtBothWidths(page, 'portal-link-not-valid');
    });

    // Embedded: refused before the account allows the page's origin, shown (and usable) after.
    site.pages.set(
      '/embed',
      `<!doctype html><title>app</title><iframe id="f" src="${url}" width="1000" height="700"></iframe>`,
    );
    await withContext(async (context) => {
      const page = await context.newPage();
      await page.goto(`${site.otherOrigin}/embed`, { waitUntil: 'load' });
      expect(await page.frameLocator('#f').getByText(mine.receiver.url).count()).toBe(0);
    }, false);
    const allowed = await op().patch(`/admin/v1/accounts/${mine.accountId}`, {
      frameAncestors: [site.otherOrigin],
    });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    await withContext(async (context) => {
      const page = await context.newPage();
      await page.goto(`${site.otherOrigin}/embed`, { waitUntil: 'load' });
      const frame = page.frameLocator('#f');
      await frame.getByRole('link', { name: mine.receiver.url }).click();
      const before = mine.receiver.received.length;
      await frame.getByRole('button', { name: 'Send a test event' }).click();
      await frame
        .getByRole('status')
        .getByText(/A test event is on its way/)
        .waitFor();
      await mine.receiver.waitFor(before + 1);
    }, false);
  }, 90_000);
});
