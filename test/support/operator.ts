import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { client, expectErrorShape, type Reply } from './client';
import { OPERATOR_TOKEN, type TestStack, type TestStackOptions } from './stack';
import { useTestStack } from './use';

export const uid = () => randomBytes(5).toString('hex');
export const uniqueEmail = (tag = 'u') => `${tag}-${uid()}@example.com`;

/** Asserts a 400 ValidationError whose `errors` name `param`, and returns the body. */
export function expectValidation(reply: Reply, param?: string) {
  const body = expectErrorShape(reply, 400, 'VALIDATION_ERROR');
  expect(body.name).toBe('ValidationError');
  expect(Array.isArray(body.errors)).toBe(true);
  expect(body.errors.length).toBeGreaterThan(0);
  for (const e of body.errors) expect(e).toHaveProperty('location');
  if (param !== undefined) expect(body.errors.map((e: { param: string }) => e.param)).toContain(param);
  return body;
}

/** The body of a 200, or a failure that shows what came instead. */
export function ok(reply: Reply) {
  if (reply.status !== 200)
    throw new Error(`expected 200, got ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/** Ids in the order the operator lists give them: byte by byte. */
export const byteOrder = (ids: string[]) =>
  [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

/**
 * Asserts that `pages` (of `pageThrough`) hold exactly the `made` items, each once, whole (as their create
 * answered them), in id order.
 */
export function expectListedOnce(pages: Record<string, any>[], items: string, made: { id: string }[]) {
  const listed = pages.flatMap((p) => p[items] as { id: string }[]);
  expect(listed.map((x) => x.id)).toEqual(byteOrder(made.map((x) => x.id)));
  for (const x of made) expect(listed).toContainEqual(x);
}

/** Queries every operator list refuses with a 400 naming the parameter: `[label, query, param]`. */
export const LIST_QUERY_REFUSALS: [string, string, string][] = [
  ['limit 0', 'limit=0', 'limit'],
  ['limit 101', 'limit=101', 'limit'],
  ['a fractional limit', 'limit=1.5', 'limit'],
  ['a limit that is no number', 'limit=lots', 'limit'],
  ['a nextId over 64 characters', `nextId=${'n'.repeat(65)}`, 'nextId'],
  ['an empty nextId', 'nextId=', 'nextId'],
  ['an unknown parameter', 'colour=red', 'colour'],
  ['a __proto__ parameter', '__proto__=x', '__proto__'],
  ['a constructor parameter', 'constructor[prototype]=x', 'constructor[prototype]'],
];

/**
 * The operator API of a test stack, in process, and factories that go through it (each step must answer 200).
 * `stack` may be the late-bound one of `useTestStack`: it is read only when a request is sent.
 */
export function operatorKit(stack: TestStack) {
  const fetcher = (path: string, init: RequestInit) => stack.app.request(path, init);
  const op = client(fetcher, OPERATOR_TOKEN);
  const asKey = (key: string) => client(fetcher, key);
  const newAccount = async (extra: Record<string, unknown> = {}) =>
    ok(await op.post('/admin/v1/accounts', { name: `Biz ${uid()}`, plan: 'GROWTH', ...extra }));
  const newCampaign = async (accountId: string, extra: Record<string, unknown> = {}) =>
    ok(await op.post(`/admin/v1/accounts/${accountId}/campaigns`, { name: `Prog ${uid()}`, ...extra }));
  const newReward = async (campaignId: string, extra: Record<string, unknown> = {}) =>
    ok(await op.post(`/admin/v1/campaigns/${campaignId}/rewards`, { title: `R ${uid()}`, ...extra }));
  const newUser = async (accountId: string, extra: Record<string, unknown> = {}) =>
    ok(
      await op.post(`/admin/v1/accounts/${accountId}/users`, {
        email: uniqueEmail(),
        role: 'ADMIN',
        ...extra,
      }),
    );
  /** A new user of the account and a key of it. */
  const newKey = async (accountId: string, user: Record<string, unknown> = {}) => {
    const u = await newUser(accountId, user);
    const k = ok(await op.post(`/admin/v1/users/${u.id}/api-keys`));
    return { user: u, keyId: k.id as string, key: k.key as string, keyPrefix: k.keyPrefix as string };
  };
  /**
   * Every page of an operator list (`path` may carry filters), following `nextId` (from `from` on) until `more`
   * is false, each page checked for the envelope's rules.
   */
  const pageThrough = async (path: string, items: string, limit: number, from: string | null = null) => {
    const pages: Record<string, any>[] = [];
    let nextId = from;
    do {
      const query = new URLSearchParams({ limit: String(limit), ...(nextId ? { nextId } : {}) });
      const page = ok(await op.get(`${path}${path.includes('?') ? '&' : '?'}${query}`));
      expect(page.limit).toBe(limit);
      expect(page[items].length).toBeLessThanOrEqual(limit);
      expect(page.more).toBe(page.nextId !== null);
      if (nextId && page[items].length > 0) expect(page[items][0].id >= nextId).toBe(true);
      pages.push(page);
      nextId = page.nextId;
      if (pages.length > 1000) throw new Error('paging does not end');
    } while (nextId);
    return pages;
  };
  /**
   * Pages through a list `limit` at a time and asserts it holds exactly the `made` items, each once, whole, in
   * id order, on as many pages as they fill.
   */
  const expectPagedOnce = async (path: string, items: string, limit: number, made: { id: string }[]) => {
    const pages = await pageThrough(path, items, limit);
    expect(pages).toHaveLength(Math.max(1, Math.ceil(made.length / limit)));
    expectListedOnce(pages, items, made);
    return pages;
  };
  /**
   * Declares the tests that the list at `path()` (made per test: it may create what it lists) answers a 400
   * naming the parameter for each of `LIST_QUERY_REFUSALS` and of the list's own `more`.
   */
  const itRefusesBadQueries = (path: () => Promise<string> | string, more: [string, string, string][] = []) =>
    it.each([...LIST_QUERY_REFUSALS, ...more])('400 for %s', async (_label, query, param) => {
      expectValidation(await op.get(`${await path()}?${query}`), param);
    });
  return {
    op,
    asKey,
    newAccount,
    newCampaign,
    newReward,
    newUser,
    newKey,
    pageThrough,
    expectPagedOnce,
    itRefusesBadQueries,
  };
}

/**
 * A test file's own stack (`useTestStack`) with the operator kit on it and the helpers of this module: what a
 * test file of the operator API needs, from one import.
 */
export function useOperatorKit(opts: TestStackOptions = { worker: false }) {
  const stack = useTestStack(opts);
  return {
    stack,
    ...operatorKit(stack),
    ok,
    uid,
    uniqueEmail,
    byteOrder,
    expectValidation,
    expectListedOnce,
    expectErrorShape,
    LIST_QUERY_REFUSALS,
  };
}
