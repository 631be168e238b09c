import { mkdirSync } from 'node:fs';
import { createStampcardClient } from '@stampcard/client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkAtBothWidths,
  SCREENSHOTS,
  seriousAxeViolations,
  signInToConsole,
  useBrowser,
} from '../../../test/support/browser';
import { client, overHttp } from '../../../test/support/client';
import { programWithReceivers } from '../../../test/support/console';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * The operator console in a real browser (Debian's Chromium, driven by playwright-core) against the service
 * served on a local port with its worker: sign in, watch the overview's counters move as actions arrive
 * through the typed client, sign out; axe-core; another site's page that frames it or posts to it. The
 * overview's screenshots are taken here: into a temporary folder, or with `UPDATE_SCREENSHOTS=1` into
 * docs/screenshots/ (so a test run leaves the checkout as it was).
 */
const stack = useTestStack({ http: true, dispatcher: true });
const startReceiver = useReceivers();

const site = useBrowser();
let api = '';
const pages = site.pages;

beforeAll(() => {
  api = stack.baseUrl!;
});

const signIn = (page: Page) => signInToConsole(page, api);

const figure = async (page: Page, id: string) => Number(await page.locator(`#${id}`).textContent());

async function withContext<T>(
  opts: Parameters<Browser['newContext']>[0],
  run: (c: BrowserContext) => Promise<T>,
) {
  const context = await site.browser.newContext(opts);
  try {
    return await run(context);
  } finally {
    await context.close();
  }
}

describe('the operator console in a browser', () => {
  it('signs in, shows the overview moving as actions arrive, and signs out', async () => {
    await withContext({ viewport: { width: 1280, height: 900 } }, async (context) => {
      const page = await context.newPage();
      const requested: string[] = [];
      const refused: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      page.on('console', (m) => {
        if (m.type() === 'error') refused.push(m.text());
      });
      // A wrong token first: the form says so, and nothing is signed in.
      await page.goto(`${api}/console/sign-in`);
      await page.getByLabel('Operator token').fill('op_wrong');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').getByText('That is not the operator token.').waitFor();
      await signIn(page);

      const cookie = (await context.cookies()).find((c) => c.name === 'stampcard_console')!;
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
      // The chart is drawn (uPlot's canvas) and the queues are listed.
      await page.locator('#overview-chart canvas').first().waitFor();
      await expect.poll(() => page.locator('#queues tbody tr').count()).toBe(stack.deps.queues.all.length);
      // What each partitioned table keeps and drops next: made ahead, nothing waiting for a partition.
      const events = page.locator('#retention tr[data-table="events"]');
      await expect.poll(() => events.locator('td').first().textContent()).toBe('90 days');
      expect(await events.locator('td').nth(3).textContent()).toMatch(
        /^events_(legacy|\d{8}) on \d{4}-\d{2}-\d{2}$/,
      );
      expect(await page.locator('#retention tbody tr').count()).toBe(5);
      const keys = page.locator('#retention tr[data-table="idempotency_keys"]');
      expect(await keys.locator('td').first().textContent()).toBe('1 day');
      expect(await page.locator('#retention td.bad').count()).toBe(0);

      const accepted = await figure(page, 'accepted-hour');
      const applied = await figure(page, 'applied-hour');
      const op = client(overHttp(api), OPERATOR_TOKEN);
      // Two receivers of the actions' webhooks: one answers 200, the other 500 (failing now).
      const p = await programWithReceivers(op, startReceiver);
      const { ok, failing } = p;
      const delivered = await figure(page, 'delivered-hour');
      const typed = createStampcardClient({ baseUrl: api, apiKey: p.key });
      for (let i = 0; i < 4; i++) {
        const res = await typed.POST('/v1/campaign/{id}/loyalty-action', {
          params: { path: { id: p.campaignId }, query: { wait: 'true' } },
          body: { participantEmail: uniqueEmail('browser'), rewardId: p.rewardId },
        });
        expect(res.data?.action.status).toBe('APPLIED');
      }
      // No reload: the page polls its figures every 5 s.
      await expect
        .poll(() => figure(page, 'accepted-hour'), { timeout: 15_000, interval: 500 })
        .toBe(accepted + 4);
      expect(await figure(page, 'applied-hour')).toBe(applied + 4);
      await ok.waitFor(4);
      await expect
        .poll(() => figure(page, 'delivered-hour'), { timeout: 15_000, interval: 500 })
        .toBe(delivered + 4);
      await page.locator('#failing').getByText(failing.url).waitFor({ timeout: 15_000 });
      expect(await page.locator('#latency-p50').textContent()).toMatch(/^\d+ ms$/);
      expect(new URL(page.url()).pathname).toBe('/console');
      await page.locator('#overview-chart canvas').first().waitFor();

      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: `${SCREENSHOTS}console-overview-1280.png`, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForTimeout(300);
      // Readable at 390 px: nothing wider than the window but the tables' own scrolling boxes.
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await page.screenshot({ path: `${SCREENSHOTS}console-overview-390.png`, fullPage: true });

      // Keyboard: the skip link comes first, then the nav.
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content');
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.textContent')).toBe('Overview');

      const foreign = requested.filter((u) => !u.startsWith(`${api}/`) && !u.startsWith('data:'));
      expect(foreign).toEqual([]);
      expect(refused.filter((m) => /Content Security Policy|Refused to/i.test(m))).toEqual([]);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { level: 1, name: /Sign in/ }).waitFor();
      expect((await context.cookies()).some((c) => c.name === 'stampcard_console')).toBe(false);
      await page.goto(`${api}/console`);
      expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    });
  }, 90_000);

  it('has no serious or critical axe-core violation on the sign-in page and the overview', async () => {
    // axe is injected as a script of the page: this profile lets it past the page's own policy.
    await withContext({ bypassCSP: true }, async (context) => {
      const page = await context.newPage();
      await page.goto(`${api}/console/sign-in`);
      await checkAtBothWidths(page, 'console-sign-in');
      await signIn(page);
      await page.locator('#overview-chart canvas').first().waitFor();
      expect(await seriousAxeViolations(page)).toEqual([]);
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await seriousAxeViolations(page)).toEqual([]);
    });
  }, 60_000);

  it('Team and keys: creates a key shown once and revokes it, with no serious axe-core violation at either width', async () => {
    const w = await makeWorld(stack.ctx);
    // axe is injected as a script of the page: this profile lets it past the page's own policy.
    await withContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } }, async (context) => {
      const page = await context.newPage();
      await signIn(page);
      await page.getByRole('link', { name: 'Team and keys' }).click();
      await page.getByRole('link', { name: w.account.name }).first().click();
      await page.getByRole('heading', { level: 2, name: 'API keys' }).waitFor();
      await page.getByLabel('New key for').selectOption(w.user.id);
      await page.getByRole('button', { name: 'Create a key' }).click();
      const key = (await page.locator('#new-key').textContent())!;
      expect(key.length).toBeGreaterThan(20);
      await checkAtBothWidths(page, 'console-team');

      // Revoke it: the page shows it revoked, and the API refuses it.
      const prefix = key.slice(0, 9);
      await page.getByRole('button', { name: `Revoke ${prefix}…` }).click();
      await page
        .getByText(/^revoked /)
        .first()
        .waitFor();
      expect(await page.content()).not.toContain(key);
      const use = await fetch(`${api}/v1/campaign/${w.campaign.id}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(use.status).toBe(403);
    });
  }, 60_000);

  it('Reviews: approves a reward awaiting approval in one click, with no serious axe-core violation at either width', async () => {
    const w = await makeWorld(stack.ctx, {
      campaign: { requireRewardApproval: true },
      reward: { conversionsRequired: 1, isUnlimited: true },
    });
    const email = uniqueEmail('review');
    const earned = await client(overHttp(api), w.key).post(
      `/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`,
      {
        participantEmail: email,
        rewardId: w.reward.id,
      },
    );
    expect(earned.body.action?.status, JSON.stringify(earned.body)).toBe('APPLIED');
    await withContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } }, async (context) => {
      const page = await context.newPage();
      await signIn(page);
      await page.getByRole('link', { name: 'Reviews' }).click();
      const approve = page.getByRole('button', { name: `Approve ${email}'s reward` });
      await approve.waitFor();
      await checkAtBothWidths(page, 'console-reviews');
      await approve.click();
      await page.getByRole('heading', { level: 1, name: 'Reviews' }).waitFor();
      expect(await page.getByRole('button', { name: `Approve ${email}'s reward` }).count()).toBe(0);
    });
    const rewards = await client(overHttp(api), w.key).get(
      `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}/rewards`,
    );
    expect(rewards.body.rewards[0].approved).toBe(true);
  }, 60_000);

  it('Programs: adds an account, a campaign and a reward, and sets the campaign, with no serious axe-core violation', async () => {
    await withContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } }, async (context) => {
      const page = await context.newPage();
      await signIn(page);
      await page.getByRole('link', { name: 'Programs' }).click();
      const add = page.locator('form[action="/console/programs/accounts"]');
      await add.getByLabel('Name').fill('Browser bakery');
      await add.getByLabel('Plan').selectOption('GROWTH');
      await add.getByRole('button', { name: 'Add the account' }).click();
      await page.getByRole('heading', { level: 1, name: 'Programs: Browser bakery' }).waitFor();
      const campaign = page.locator('form[action$="/campaigns"]');
      await campaign.getByLabel('Name').fill('Loaf club');
      await campaign.getByLabel('Currency (ISO 4217, such as USD)').fill('EUR');
      await campaign.getByRole('button', { name: 'Add the campaign' }).click();
      await page.getByRole('heading', { level: 1, name: /Loaf club/ }).waitFor();
      await page.getByRole('link', { name: 'Add a reward' }).click();
      await page.getByLabel('Title').fill('Free loaf');
      await page.getByLabel('Loyalty actions per reward').fill('3');
      await page.getByLabel('Form field 1: key').fill('address');
      await checkAtBothWidths(page, 'console-reward');
      await page.getByRole('button', { name: 'Add the reward' }).click();
      await page.getByRole('status').getByText('Saved.').waitFor();
      await page.getByRole('link', { name: 'Loaf club' }).click();
      await page.getByRole('link', { name: 'Free loaf' }).waitFor();
      await page.getByLabel('Rewards wait for an operator to approve them').check();
      await page.getByLabel('Level', { exact: true }).selectOption('STRICT');
      await page.getByLabel(/^Blacklist/).fill('spam.example');
      await checkAtBothWidths(page, 'console-campaign');
      await page.getByRole('button', { name: 'Save the campaign' }).click();
      await page.getByRole('status').getByText('Saved.').waitFor();
      expect(await page.getByLabel('Rewards wait for an operator to approve them').isChecked()).toBe(true);
      expect(await page.getByLabel(/^Blacklist/).inputValue()).toBe('spam.example');
      await page.getByRole('link', { name: "The account's campaigns" }).click();
      await page.getByRole('heading', { level: 3, name: /Loaf club/ }).waitFor();
      await checkAtBothWidths(page, 'console-programs');
    });
  }, 90_000);

  it('Participants: finds a participant and sets its risk by hand, with no serious axe-core violation', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('person');
    const added = await client(overHttp(api), w.key).post(`/v1/campaign/${w.campaign.id}/participant`, {
      email,
      firstName: 'Ada',
      lastName: 'Lovelace',
    });
    expect(added.status).toBe(200);
    await withContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } }, async (context) => {
      const page = await context.newPage();
      await signIn(page);
      await page.getByRole('link', { name: 'Participants' }).click();
      await page.getByLabel('Campaign id').fill(w.campaign.id);
      await page.getByLabel('Email or name starts with').fill('love');
      await page.getByRole('button', { name: 'Find' }).click();
      await page.getByRole('link', { name: email }).waitFor();
      await checkAtBothWidths(page, 'console-participants');
      await page.getByRole('link', { name: email }).click();
      await page.getByLabel('Level', { exact: true }).selectOption('HIGH');
      await page.getByRole('button', { name: 'Set by hand' }).click();
      await page.getByRole('status').getByText('Risk level set to HIGH by hand.').waitFor();
      // Its history from the audit log: the API key's add, then this change, the console's.
      const history = page.getByRole('region', { name: 'History' });
      await history.getByText('fraud_risk_level').waitFor();
      expect(await history.locator('tbody tr').count()).toBe(2);
      expect(await history.locator('tbody tr').first().textContent()).toContain('the console');
      expect(await history.locator('tbody tr').last().textContent()).toContain(`API key ${w.keyId}`);
      await checkAtBothWidths(page, 'console-participant');
    });
  }, 60_000);

  it("Imports: maps a file's columns before it starts, shows the import's progress live and its refused rows, with no serious axe-core violation", async () => {
    const w = await makeWorld(stack.ctx, { reward: { title: 'Free coffee', isUnlimited: true } });
    const rows = Array.from({ length: 3000 }, (_, i) =>
      i === 1500 ? 'not-an-email,Bad,gold,1' : `${uniqueEmail(`imp${i}`)},Name ${i},gold,${i % 3}`,
    );
    const good = `email,firstName,metadata.tier,loyaltyActionCount.${w.reward.id}\r\n${rows.join('\r\n')}\r\n`;
    await withContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } }, async (context) => {
      const page = await context.newPage();
      await signIn(page);
      await page.getByRole('link', { name: 'Imports' }).click();
      await page.getByLabel('Campaign id').fill(w.campaign.id);
      await page.getByRole('button', { name: 'Open' }).click();
      // A file whose header the import would refuse: the mapping says why, and the import cannot start.
      await page.getByLabel('File', { exact: true }).setInputFiles({
        name: 'wrong.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('email,shoeSize\r\na@example.com,42\r\n'),
      });
      await page.getByRole('alert').getByText('This file cannot be imported').waitFor();
      await page.getByRole('cell', { name: 'not imported' }).waitFor();
      expect(await page.getByRole('button', { name: 'Start the import' }).isDisabled()).toBe(true);
      // The right file: every column mapped, the reward by its title.
      await page
        .getByLabel('File')
        .setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(good) });
      await page.getByRole('cell', { name: 'a count carried over for "Free coffee"' }).waitFor();
      await page.getByRole('cell', { name: 'metadata key "tier"' }).waitFor();
      await expect.poll(() => page.getByRole('button', { name: 'Start the import' }).isEnabled()).toBe(true);
      await checkAtBothWidths(page, 'console-import-mapping');
      await page.getByRole('button', { name: 'Start the import' }).click();
      // Its page, updated in place (htmx polls the progress) until it ends.
      await page.getByRole('heading', { level: 1, name: /^Import imp_/ }).waitFor();
      const first = await page.locator('[data-status]').getAttribute('data-status');
      expect(['QUEUED', 'RUNNING']).toContain(first);
      const url = page.url();
      await page.locator('[data-status="SUCCEEDED"]').waitFor({ timeout: 30_000 });
      expect(page.url()).toBe(url);
      expect(await page.locator('#import-bar').getAttribute('value')).toBe('3000');
      expect(await page.locator('[data-rows-done]').getAttribute('data-rows-done')).toBe('3000');
      await page.reload();
      await page.getByRole('cell', { name: 'email must be an email address' }).waitFor();
      const download = page.waitForEvent('download');
      await page.getByRole('link', { name: 'Download every refused row (CSV)' }).click();
      const file = await (await download).path();
      const { readFileSync } = await import('node:fs');
      expect(readFileSync(file, 'utf8')).toContain(
        '1501,VALIDATION_ERROR,email must be an email address,not-an-email,Bad,gold,1',
      );
      await checkAtBothWidths(page, 'console-import');
    });
  }, 90_000);

  it('goes to the sign-in page by itself when its session ends while it is open (the poll gets 401)', async () => {
    await withContext({}, async (context) => {
      const page = await context.newPage();
      await signIn(page);
      await context.clearCookies();
      await page.waitForURL(`${api}/console/sign-in`, { timeout: 12_000 });
      await page.getByLabel('Operator token').waitFor();
    });
  }, 60_000);

  it('cannot be framed by a page of another site', async () => {
    pages.set(
      '/frame',
      `<!doctype html><title>other</title><iframe id="f" src="${api}/console/sign-in"></iframe>`,
    );
    await withContext({}, async (context) => {
      const page = await context.newPage();
      const answers: number[] = [];
      page.on('response', (r) => {
        if (r.url() === `${api}/console/sign-in`) answers.push(r.status());
      });
      await page.goto(`${site.otherOrigin}/frame`, { waitUntil: 'load' });
      // The API answered the frame's request, and the browser refused to show what it answered.
      expect(answers).toEqual([200]);
      expect(await page.frameLocator('#f').getByLabel('Operator token').count()).toBe(0);
    });
  }, 60_000);

  it('refuses a form another site posts to sign the operator out, and the session stays', async () => {
    pages.set(
      '/sign-out',
      `<!doctype html><title>other</title>
       <form id="f" method="POST" action="${api}/console/sign-out"><input type="hidden" name="_csrf" value="guess"></form>
       <script>document.getElementById('f').submit()</script>`,
    );
    await withContext({}, async (context) => {
      const page = await context.newPage();
      await signIn(page);
      const posted = page.waitForResponse((r) => r.url() === `${api}/console/sign-out`);
      await page.goto(`${site.otherOrigin}/sign-out`);
      const res = await posted;
      expect(res.status()).toBe(403);
      expect(await res.json()).toMatchObject({ code: 'NOT_AUTHORIZED' });
      await page.goto(`${api}/console`);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    });
  }, 60_000);
});
