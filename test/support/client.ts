import { expect } from 'vitest';

type Fetcher = (path: string, init: RequestInit) => Promise<Response> | Response;

export type Reply = { status: number; body: any; headers: Headers };

/** A small JSON client over `app.request` (in-process) or `fetch` (a served stack). */
export function client(fetcher: Fetcher, token?: string) {
  async function send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply> {
    const h: Record<string, string> = { ...headers };
    if (token) h.authorization = `Bearer ${token}`;
    let payload: string | undefined;
    if (typeof body === 'string') payload = body;
    else if (body !== undefined) {
      payload = JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetcher(path, { method, headers: h, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers };
  }
  return {
    get: (path: string, headers?: Record<string, string>) => send('GET', path, undefined, headers),
    post: (path: string, body?: unknown, headers?: Record<string, string>) =>
      send('POST', path, body, headers),
    patch: (path: string, body?: unknown, headers?: Record<string, string>) =>
      send('PATCH', path, body, headers),
    delete: (path: string, headers?: Record<string, string>) => send('DELETE', path, undefined, headers),
  };
}

export const inProcess =
  (app: { request: (path: string, init: RequestInit) => Promise<Response> | Response }) =>
  (path: string, init: RequestInit) =>
    app.request(path, init);

export const overHttp = (baseUrl: string) => (path: string, init: RequestInit) =>
  fetch(`${baseUrl}${path}`, init);

/** Asserts the contract's error body and returns it. */
export function expectErrorShape(reply: Reply, status: number, code: string) {
  const b = reply.body;
  const ok =
    reply.status === status &&
    b?.code === code &&
    b?.status === status &&
    typeof b?.name === 'string' &&
    typeof b?.message === 'string' &&
    typeof b?.supportUrl === 'string' &&
    b?.level === 'error' &&
    typeof b?.timestamp === 'string' &&
    !Number.isNaN(Date.parse(b.timestamp));
  if (!ok) throw new Error(`expected ${status} ${code} error body, got ${reply.status} ${JSON.stringify(b)}`);
  return b;
}

export async function eventually<T>(
  fn: () => Promise<T>,
  check: (v: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (check(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`condition not met in ${timeoutMs} ms; last value ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * What a business needs to send actions, made the way an operator makes it (over the operator API of a
 * running service): an account, an ADMIN user's API key, a running campaign and one reward. Each step must
 * answer 200.
 */
export async function operatorProgram(
  op: ReturnType<typeof client>,
  opts: { rateLimits?: unknown; reward?: Record<string, unknown> } = {},
) {
  const ok = (r: Reply) => {
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const account = ok(
    await op.post('/admin/v1/accounts', {
      name: 'Acme',
      plan: 'GROWTH',
      ...(opts.rateLimits ? { rateLimits: opts.rateLimits } : {}),
    }),
  );
  const user = ok(
    await op.post(`/admin/v1/accounts/${account.id}/users`, { email: 'a@acme.test', role: 'ADMIN' }),
  );
  const { key } = ok(await op.post(`/admin/v1/users/${user.id}/api-keys`));
  const campaign = ok(
    await op.post(`/admin/v1/accounts/${account.id}/campaigns`, { name: 'Coffee', status: 'IN_PROGRESS' }),
  );
  const reward = ok(
    await op.post(`/admin/v1/campaigns/${campaign.id}/rewards`, { title: 'Free coffee', ...opts.reward }),
  );
  return {
    accountId: account.id as string,
    key: key as string,
    campaignId: campaign.id as string,
    rewardId: reward.id as string,
  };
}
