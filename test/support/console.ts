import { expect } from 'vitest';
import { type client, operatorProgram } from './client';
import { TEST_RATE_LIMITS } from './factories';
import type { startReceiver } from './receiver';
import { OPERATOR_TOKEN } from './stack';

/**
 * What the console's overview tests watch move: a program made through the operator API (a reward no action
 * reaches, so each action is one `LOYALTY_ACTION_APPLIED`), and two receivers of those webhooks, one answering
 * 200 (`ok`) and one 500 (`failing`: listed among the endpoints failing now).
 */
export async function programWithReceivers(
  op: ReturnType<typeof client>,
  start: (...args: Parameters<typeof startReceiver>) => ReturnType<typeof startReceiver>,
) {
  const p = await operatorProgram(op, { rateLimits: TEST_RATE_LIMITS, reward: { conversionsRequired: 100 } });
  const ok = await start();
  const failing = await start(() => ({ status: 500 }));
  for (const r of [ok, failing]) {
    const res = await op.post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
      url: r.url,
      eventTypes: ['LOYALTY_ACTION_APPLIED'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  return { ...p, ok, failing };
}

/** A console form post's content type. */
export const CONSOLE_FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Posts the console's sign-in form with `token`; the answer is not followed (its cookie and redirect show). */
export function consoleSignIn(baseUrl: string, token = OPERATOR_TOKEN) {
  return fetch(`${baseUrl}/console/sign-in`, {
    method: 'POST',
    headers: CONSOLE_FORM,
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  });
}

/** The `name=value` of a signed-in session's cookie, and its CSRF token as the page's sign-out form has it. */
export async function consoleSession(baseUrl: string, token = OPERATOR_TOKEN) {
  const res = await consoleSignIn(baseUrl, token);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const page = await fetch(`${baseUrl}/console`, { headers: { cookie } });
  expect(page.status).toBe(200);
  const csrf = (await page.text()).match(/name="_csrf" value="([^"]+)"/)![1]!;
  return { cookie, csrf };
}

/** Posts a console form (`fields`, with the session's `cookie` when given); the answer is not followed. */
export function consolePost(baseUrl: string, path: string, fields: Record<string, string>, cookie?: string) {
  return fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { ...CONSOLE_FORM, ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
}
