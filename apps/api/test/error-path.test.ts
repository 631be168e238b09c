import { createApp } from '@stampcard/api';
import { safeError } from '@stampcard/config';
import { DomainError } from '@stampcard/core';
import { sql } from 'drizzle-orm';
import { HTTPException } from 'hono/http-exception';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { capturedLogger } from '../../../test/support/logs';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/** One error path for every failure: each status keeps its meaning and the documented body; logs keep no values. */
const stack = useTestStack({ worker: false, http: true });

/** An app whose extra middleware throws what the test gives it. */
function appThrowing(thrown: () => unknown, logger = capturedLogger().logger) {
  return createApp({
    ...stack.deps,
    logger,
    extraMiddleware: [
      async () => {
        throw thrown();
      },
    ],
  });
}

async function getCampaigns(app: ReturnType<typeof createApp>) {
  const w = await makeWorld(stack.ctx);
  return client(inProcess(app), w.key).get('/v1/campaigns');
}

describe('framework exceptions keep their status', () => {
  it('an HTTPException 429 from a middleware is a 429 RATE_LIMIT with its headers, not a 400', async () => {
    const res = new Response(null, { headers: { 'Retry-After': '7' } });
    const r = await getCampaigns(
      appThrowing(() => new HTTPException(429, { message: 'Too many requests', res })),
    );
    expectErrorShape(r, 429, 'RATE_LIMIT');
    expect(r.body.message).toBe('Too many requests');
    expect(r.headers.get('retry-after')).toBe('7');
  });

  it('401, 403, 404, 405 and 503 map to their codes; another 4xx is a 400; a 5xx is a logged 500', async () => {
    for (const [status, expected, code] of [
      [401, 401, 'AUTHENTICATION_REQUIRED'],
      [403, 403, 'NOT_AUTHORIZED'],
      [404, 404, 'NOT_FOUND'],
      [405, 405, 'METHOD_NOT_ALLOWED'],
      [503, 503, 'UNAVAILABLE'],
      [418, 400, 'VALIDATION_ERROR'],
      [501, 500, 'INTERNAL_ERROR'],
    ] as const) {
      const r = await getCampaigns(appThrowing(() => new HTTPException(status, { message: 'm' })));
      expectErrorShape(r, expected, code);
    }
  });
});

describe('domain errors', () => {
  it('details never override the common fields: status, code and name follow the code', async () => {
    const r = await getCampaigns(
      appThrowing(
        () =>
          new DomainError('NOT_FOUND', 'gone', {
            status: 200,
            code: 'OK',
            name: 'Fine',
            level: 'info',
            extra: 1,
          }),
      ),
    );
    const body = expectErrorShape(r, 404, 'NOT_FOUND');
    expect(body).toMatchObject({ name: 'NotFound', level: 'error', extra: 1 });
  });

  it('a 500-class domain error is logged with its cause before it is answered', async () => {
    const { logger, lines } = capturedLogger();
    const cause = Object.assign(new Error('disk says no'), { code: 'EIO' });
    const r = await getCampaigns(
      appThrowing(() => new DomainError('INTERNAL_ERROR', 'broken', {}, { cause }), logger),
    );
    const body = expectErrorShape(r, 500, 'INTERNAL_ERROR');
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.requestId === body.requestId && l.err);
    expect(line?.err).toMatchObject({
      type: 'DomainError',
      name: 'InternalError',
      cause: { type: 'Error', code: 'EIO' },
    });
  });
});

describe('store outages are recognised by their codes', () => {
  it('SQLSTATE and socket codes, also as a cause, are 503; a message that merely mentions a connection is a 500', async () => {
    for (const err of [
      Object.assign(new Error('x'), { code: '57P01' }),
      Object.assign(new Error('x'), { code: '08006' }),
      Object.assign(new Error('x'), { code: '53300' }),
      Object.assign(new Error('x'), { code: '57014' }),
      new Error('wrapped', { cause: Object.assign(new Error('y'), { code: 'ECONNREFUSED' }) }),
    ]) {
      expectErrorShape(await getCampaigns(appThrowing(() => err)), 503, 'UNAVAILABLE');
    }
    for (const err of [
      new Error('Connection is closed.'),
      new Error("Stream isn't writeable"),
      Object.assign(new Error('x'), { code: '23505' }),
    ]) {
      expectErrorShape(await getCampaigns(appThrowing(() => err)), 500, 'INTERNAL_ERROR');
    }
  });
});

describe('logs carry no personal data', () => {
  it('a failed query with an email, a name and metadata in its parameters logs class, code and request id only', async () => {
    const { logger, lines } = capturedLogger();
    const email = uniqueEmail('secret');
    const app = createApp({
      ...stack.deps,
      logger,
      extraMiddleware: [
        async (c) => {
          // A real driver error: PostgreSQL refuses the cast, and the query's parameters travel with the error.
          await c
            .get('ctx')
            .db.execute(
              sql`select ${email}::int, ${'Ada Lovelace'}::text, ${JSON.stringify({ vip: 'gold-secret' })}::jsonb`,
            );
        },
      ],
    });
    const w = await makeWorld(stack.ctx);
    const r = await client(inProcess(app), w.key).get('/v1/campaigns');
    const body = expectErrorShape(r, 500, 'INTERNAL_ERROR');
    const all = lines.join('\n');
    expect(all).not.toContain(email);
    expect(all).not.toContain('Ada Lovelace');
    expect(all).not.toContain('gold-secret');
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'unhandled error');
    expect(line).toMatchObject({ requestId: body.requestId, err: { cause: { code: '22P02' } } });
    expect(line.err.type).toMatch(/Error/);
  });

  it("the request line names the path without the participant's email", async () => {
    const { logger, lines } = capturedLogger();
    const app = createApp({ ...stack.deps, logger });
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('logged');
    await client(inProcess(app), w.key).get(
      `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`,
    );
    await client(inProcess(app), w.key).get(`/v1/campaign/${w.campaign.id}/participant/${email}`);
    const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
    expect(requests.map((l) => l.path)).toEqual([
      `/v1/campaign/${w.campaign.id}/participant/:email`,
      `/v1/campaign/${w.campaign.id}/participant/:email`,
    ]);
    expect(lines.join('\n')).not.toContain(email.split('@')[0]);
  });

  it('safeError keeps class, code, constraint and frames, never the message or other fields', () => {
    const pg = Object.assign(new Error('duplicate key value: (email)=(x@example.com)'), {
      code: '23505',
      constraint_name: 'participants_email_uq',
      table_name: 'participants',
      detail: 'Key (email)=(x@example.com) already exists.',
      parameters: ['x@example.com'],
    });
    const out = safeError(new Error('Failed query: insert … params: x@example.com', { cause: pg }));
    expect(JSON.stringify(out)).not.toContain('example.com');
    expect(out).toMatchObject({
      type: 'Error',
      cause: { code: '23505', constraint: 'participants_email_uq', table: 'participants' },
    });
    expect(String(out.stack)).toMatch(/^at /);
  });
});

describe('answers made outside the routes have the documented body too', () => {
  it("Node's refusal of headers over 16 KiB is a 400 VALIDATION_ERROR body", async () => {
    const r = await fetch(`${stack.baseUrl}/v1/campaigns`, { headers: { 'x-big': 'a'.repeat(20_000) } });
    const text = await r.text();
    const body = expectErrorShape(
      { status: r.status, body: JSON.parse(text), headers: r.headers },
      400,
      'VALIDATION_ERROR',
    );
    expect(body.message).toMatch(/headers are larger than 16 KiB/);
  });

  it("the dashboard's 401 asks for the token with the documented body", async () => {
    const r = await fetch(`${stack.baseUrl}/admin/queues`);
    const body = expectErrorShape(
      { status: r.status, body: await r.json(), headers: r.headers },
      401,
      'AUTHENTICATION_REQUIRED',
    );
    expect(r.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect(body.message).toMatch(/token/);
    const ok = await fetch(`${stack.baseUrl}/admin/queues`, {
      headers: { authorization: `Basic ${Buffer.from(`ops:${OPERATOR_TOKEN}`).toString('base64')}` },
    });
    expect(ok.status).toBe(200);
  });
});
