import { createStampcardClient } from '@stampcard/client';
import { OVERVIEW_STATEMENT_TIMEOUT_MS } from '@stampcard/core';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../../../test/support/client';
import {
  CONSOLE_FORM,
  consoleSession,
  consoleSignIn,
  programWithReceivers,
} from '../../../test/support/console';
import { uniqueEmail } from '../../../test/support/factories';
import { queueDown } from '../../../test/support/queue-down';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { createApp } from '../src/app';
import { newSession, SESSION_TTL_SECONDS } from '../src/console/session';

/**
 * The operator console's handlers against the running service (API over HTTP, worker, dispatcher, real
 * PostgreSQL and Redis): sign-in and its cookie, pages refused without a session, CSRF and other sites
 * refused, sign-out, and the overview's figures after real actions and deliveries.
 */
const stack = useTestStack({ http: true, dispatcher: true });
const startReceiver = useReceivers();

const url = (path: string) => `${stack.baseUrl}${path}`;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = CONSOLE_FORM;
const signIn = (token = OPERATOR_TOKEN) => consoleSignIn(stack.baseUrl!, token);
const session = () => consoleSession(stack.baseUrl!);

const figure = (html: string, id: string) => html.match(new RegExp(`id="${id}"[^>]*>([^<]*)<`))?.[1];

describe('signing in to the console', () => {
  it('refuses a wrong token with 401 and sets no cookie; an empty one is a 400', async () => {
    const wrong = await signIn('op_not_the_token');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect(await wrong.text()).toContain('That is not the operator token.');
    const empty = await signIn('');
    expect(empty.status).toBe(400);
    expect(empty.headers.get('set-cookie')).toBeNull();
  });

  it('with the token sets an HttpOnly, Secure, SameSite=Strict session cookie on /console that is not the token', async () => {
    const res = await signIn();
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^stampcard_console=v1\.\d+\.[\w-]+\.[\w-]+;/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('Secure');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/console');
    expect(cookie).toContain(`Max-Age=${SESSION_TTL_SECONDS}`);
    expect(cookie).not.toContain(OPERATOR_TOKEN);
  });

  it('refuses pages without a session: a redirect for the browser, 401 for htmx', async () => {
    const page = await fetch(url('/console'), { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/console/sign-in');
    const fragment = await fetch(url('/console/overview'), { headers: { 'hx-request': 'true' } });
    expect(fragment.status).toBe(401);
    expect(fragment.headers.get('hx-redirect')).toBe('/console/sign-in');
    expect(await fragment.json()).toMatchObject({ code: 'AUTHENTICATION_REQUIRED', status: 401 });
  });

  it("refuses a tampered, expired, or other token's session", async () => {
    const { cookie } = await session();
    const tampered = cookie.replace(/\.(\d+)\./, (_, exp: string) => `.${Number(exp) + 1000}.`);
    const expired = newSession(OPERATOR_TOKEN, new Date(Date.now() - (SESSION_TTL_SECONDS + 1) * 1000)).value;
    const other = newSession('op_another_services_token', new Date()).value;
    for (const value of [
      tampered,
      `stampcard_console=${expired}`,
      `stampcard_console=${other}`,
      'stampcard_console=x',
    ]) {
      const res = await fetch(url('/console'), { headers: { cookie: value }, redirect: 'manual' });
      expect(res.status, value).toBe(303);
    }
  });

  it('forbids framing and inline script on every page', async () => {
    const { cookie } = await session();
    for (const [path, headers] of [
      ['/console/sign-in', {}],
      ['/console', { cookie }],
    ] as const) {
      const res = await fetch(url(path), { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(await res.text()).not.toMatch(/<script(?![^>]*\bsrc=)/);
    }
  });

  it('serves htmx and uPlot from their npm packages, nothing for an unknown file', async () => {
    const htmx = await fetch(url('/console/assets/htmx.min.js'));
    expect(htmx.status).toBe(200);
    expect(htmx.headers.get('content-type')).toContain('text/javascript');
    expect(await htmx.text()).toContain('4.0.1');
    expect((await fetch(url('/console/assets/uplot.min.js'))).status).toBe(200);
    const missing = await fetch(url('/console/assets/..%2Fpackage.json'));
    expect(missing.status).toBe(404);
  });
});

describe('state-changing console requests', () => {
  it('are refused without the CSRF token or with a wrong one, and from another site', async () => {
    const { cookie, csrf } = await session();
    const signOut = (body: string, headers: Record<string, string> = {}) =>
      fetch(url('/console/sign-out'), {
        method: 'POST',
        headers: { ...FORM, cookie, ...headers },
        body,
        redirect: 'manual',
      });
    const none = await signOut('');
    expect(none.status).toBe(403);
    expect(await none.json()).toMatchObject({ code: 'NOT_AUTHORIZED' });
    expect((await signOut(form({ _csrf: `${csrf}x` }))).status).toBe(403);
    // Another session's token is not this one's.
    const other = await session();
    expect((await signOut(form({ _csrf: other.csrf }))).status).toBe(403);
    const crossSite = await signOut(form({ _csrf: csrf }), { origin: 'http://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.text()).toContain('another site');
    const fetchedCrossSite = await signOut(form({ _csrf: csrf }), { 'sec-fetch-site': 'cross-site' });
    expect(fetchedCrossSite.status).toBe(403);
    const signInCrossSite = await fetch(url('/console/sign-in'), {
      method: 'POST',
      headers: { ...FORM, origin: 'http://evil.example' },
      body: form({ token: OPERATOR_TOKEN }),
    });
    expect(signInCrossSite.status).toBe(403);
    expect(signInCrossSite.headers.get('set-cookie')).toBeNull();
  });

  it('signs out with the CSRF token (the header works too): the cookie is cleared', async () => {
    const { cookie, csrf } = await session();
    const res = await fetch(url('/console/sign-out'), {
      method: 'POST',
      headers: { ...FORM, cookie },
      body: form({ _csrf: csrf }),
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in');
    expect(res.headers.get('set-cookie')).toMatch(/^stampcard_console=;.*Max-Age=0/);
    // The session is over on the server too: a copy of the cookie kept from before is refused.
    const copy = await fetch(url('/console'), { headers: { cookie }, redirect: 'manual' });
    expect(copy.status).toBe(303);
    expect(copy.headers.get('location')).toBe('/console/sign-in');
    expect((await fetch(url('/console/sign-in'), { headers: { cookie }, redirect: 'manual' })).status).toBe(
      200,
    );
    // A sign-out is kept until its session would have expired, then deleted by a later sign-out.
    await stack.ctx.db.execute(
      sql`insert into console_sign_outs (session_id, expires_at) values ('long-gone', now() - interval '1 hour')`,
    );
    const viaHeader = await session();
    const again = await fetch(url('/console/sign-out'), {
      method: 'POST',
      headers: { cookie: viaHeader.cookie, 'x-csrf-token': viaHeader.csrf },
      redirect: 'manual',
    });
    expect(again.status).toBe(303);
    const kept = await stack.ctx.db.execute<{ session_id: string }>(
      sql`select session_id from console_sign_outs`,
    );
    expect(kept.map((r) => r.session_id)).not.toContain('long-gone');
    expect(kept.length).toBeGreaterThanOrEqual(2);
  });
});

describe('the console without Redis', () => {
  it('still answers from PostgreSQL: the overview says the queues are out of reach, and a signed-out session stays out', async () => {
    const { cookie } = await session();
    const gone = await session();
    const signedOut = await fetch(url('/console/sign-out'), {
      method: 'POST',
      headers: { cookie: gone.cookie, 'x-csrf-token': gone.csrf },
      redirect: 'manual',
    });
    expect(signedOut.status).toBe(303);
    const down = queueDown();
    try {
      const app = createApp({ ...stack.deps, redis: down.redis, queues: down.queues });
      const res = await app.request('/console', { headers: { cookie } });
      expect(res.status).toBe(200);
      const page = await res.text();
      expect(page).toContain('id="queues-unavailable"');
      expect(page).not.toContain('data-queue=');
      for (const path of ['/console/webhooks', '/console/participants', '/console/programs']) {
        expect((await app.request(path, { headers: { cookie } })).status, path).toBe(200);
      }
      const refused = await app.request('/console', { headers: { cookie: gone.cookie }, redirect: 'manual' });
      expect(refused.status).toBe(303);
      expect(refused.headers.get('location')).toBe('/console/sign-in');
    } finally {
      await down.close();
    }
  });
});

describe('the overview', () => {
  it('counts actions accepted and applied, deliveries and their latency, the queues and a failing endpoint', async () => {
    const { cookie } = await session();
    const fragment = async () => {
      const res = await fetch(url('/console/overview'), { headers: { cookie, 'hx-request': 'true' } });
      expect(res.status).toBe(200);
      return res.text();
    };
    const before = await fragment();
    const accepted0 = Number(figure(before, 'accepted-hour'));
    const applied0 = Number(figure(before, 'applied-hour'));
    expect(before).toContain('data-queue=');

    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    // Two receivers of the actions' webhooks: one answers 200, the other 500 (failing now).
    const p = await programWithReceivers(op, startReceiver);
    const { ok, failing } = p;
    const api = createStampcardClient({ baseUrl: stack.baseUrl!, apiKey: p.key });
    for (let i = 0; i < 3; i++) {
      const res = await api.POST('/v1/campaign/{id}/loyalty-action', {
        params: { path: { id: p.campaignId }, query: { wait: 'true' } },
        body: { participantEmail: uniqueEmail('ov'), rewardId: p.rewardId },
      });
      expect(res.data?.action.status).toBe('APPLIED');
    }
    await ok.waitFor(3);
    await failing.waitFor(3);

    const after = await eventually(
      fragment,
      (html) => Number(figure(html, 'delivered-hour')) >= 3 && html.includes(failing.url),
    );
    expect(Number(figure(after, 'accepted-hour'))).toBe(accepted0 + 3);
    expect(Number(figure(after, 'applied-hour'))).toBe(applied0 + 3);
    expect(Number(figure(after, 'failed-hour'))).toBeGreaterThanOrEqual(1);
    expect(figure(after, 'latency-p50')).toMatch(/^\d+ ms$/);
    expect(figure(after, 'latency-p99')).toMatch(/^\d+ ms$/);
    // The failing receiver is listed, the healthy one is not.
    expect(after).not.toContain(`>${ok.url}<`);
    const chart = JSON.parse(after.match(/data-chart="([^"]+)"/)![1]!.replaceAll('&quot;', '"'));
    expect(chart.t).toHaveLength(60);
    expect(chart.accepted.reduce((a: number, b: number) => a + b, 0)).toBe(accepted0 + 3);
    // "This minute" is the chart's last minute (the current one).
    expect(Number(figure(after, 'accepted-minute'))).toBe(chart.accepted.at(-1));
    expect(Number(figure(after, 'failed-minute'))).toBe(chart.failed.at(-1));
  }, 60_000);

  it('gives up after its statement timeout when the ledger is locked: 503, in about a second', async () => {
    const { cookie } = await session();
    // Another session holds the ledger locked for longer than the overview waits.
    const holder = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
    const locker = await holder.reserve();
    await locker`begin`;
    await locker`lock table loyalty_actions in access exclusive mode`;
    try {
      const started = Date.now();
      const res = await fetch(url('/console/overview'), { headers: { cookie, 'hx-request': 'true' } });
      const took = Date.now() - started;
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ code: 'UNAVAILABLE' });
      expect(took).toBeGreaterThanOrEqual(OVERVIEW_STATEMENT_TIMEOUT_MS - 50);
      // Well before the pool's own 3 s statement and lock timeouts.
      expect(took).toBeLessThan(2500);
    } finally {
      await locker`rollback`;
      locker.release();
      await holder.end();
    }
  });
});
