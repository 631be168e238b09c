import { randomBytes } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ERROR_CATALOG, type ErrorCode } from '@stampcard/core';
import Ajv2020 from 'ajv/dist/2020';
import { beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, inProcess, type Reply } from '../../../test/support/client';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { DOCS_PATH, OPENAPI_PATH } from '../src/docs/index';
import { HTTP_ERRORS } from '../src/lib/error-status';

const stack = useTestStack();

type Schema = Record<string, any>;
type Operation = { tags?: string[]; security?: Record<string, string[]>[]; responses: Record<string, any> };
type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Schema> };
};

let doc: Doc;
let operations: { method: string; path: string; op: Operation }[];

beforeAll(async () => {
  const res = await stack.app.request(OPENAPI_PATH);
  doc = (await res.json()) as Doc;
  operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method, path, op })),
  );
});

const ref = (schema: Schema): Schema => {
  if (typeof schema.$ref !== 'string') return schema;
  const name = schema.$ref.replace('#/components/schemas/', '');
  const found = doc.components.schemas[name];
  if (!found) throw new Error(`dangling $ref ${schema.$ref}`);
  return ref(found);
};

/** A schema that says what it holds: named properties (through refs and combinations), not a bare object. */
function typed(schema: Schema): boolean {
  const s = ref(schema);
  for (const key of ['allOf', 'oneOf', 'anyOf']) if (Array.isArray(s[key])) return s[key].every(typed);
  if (s.type === 'array') return typed(s.items ?? {});
  return s.type === 'object' && Object.keys(s.properties ?? {}).length > 0;
}

const refersToError = (schema: Schema) =>
  schema.$ref === '#/components/schemas/Error' ||
  (Array.isArray(schema.allOf) && schema.allOf.some((s: Schema) => s.$ref === '#/components/schemas/Error'));

/** The route paths, as Hono registered them, that are not operations of the API. */
const notOperations = (path: string) =>
  path === '/health' ||
  path === '/ready' ||
  path === '/admin/queues' ||
  path.startsWith('/admin/queues/') ||
  path === OPENAPI_PATH ||
  path === DOCS_PATH ||
  path.startsWith(`${DOCS_PATH}/`);

describe('GET /v1/openapi.json', () => {
  it('answers the OpenAPI 3.1 document without an API key', async () => {
    const res = await stack.app.request(OPENAPI_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as Doc & { info: { title: string } };
    expect(body.openapi).toMatch(/^3\.1\.\d+$/);
    expect(body.info.title).toBe('Stampcard API');
  });

  it('is valid against the OpenAPI 3.1 schema', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('documents every route the app serves, and nothing it does not', () => {
    const served = new Set(
      stack.app.routes
        .filter((r) => r.method !== 'ALL' && !notOperations(r.path))
        .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([^/]+)/g, '{$1}')}`),
    );
    expect(served.size).toBeGreaterThan(25);
    const documented = new Set(operations.map((o) => `${o.method} ${o.path}`));
    expect([...served].filter((r) => !documented.has(r))).toEqual([]);
    expect([...documented].filter((r) => !served.has(r))).toEqual([]);
  });

  it('gives every operation a typed 200 body', () => {
    const untyped = operations.filter(({ op }) => {
      const schema = op.responses['200']?.content?.['application/json']?.schema;
      return !schema || !typed(schema);
    });
    expect(untyped.map((o) => `${o.method} ${o.path}`)).toEqual([]);
  });

  it('gives every error response the shared Error schema, with the codes its status carries', () => {
    const errorSchema = doc.components.schemas.Error!;
    expect(errorSchema.properties.code.enum).toEqual(Object.keys(ERROR_CATALOG));
    for (const field of ['name', 'code', 'message', 'status', 'supportUrl', 'level', 'timestamp']) {
      expect(errorSchema.required).toContain(field);
    }
    expect(errorSchema.properties.errors).toBeDefined();
    for (const { method, path, op } of operations) {
      const statuses = Object.keys(op.responses).filter((s) => s !== '200');
      // Every route can refuse its input, its caller, or fail.
      expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['400', '403', '500', '503']));
      for (const status of statuses) {
        const schema = op.responses[status].content['application/json'].schema;
        expect(refersToError(schema), `${method} ${path} ${status}`).toBe(true);
        const codes: ErrorCode[] = schema.allOf[1].properties.code.enum;
        expect(codes.length).toBeGreaterThan(0);
        for (const code of codes) {
          expect(HTTP_ERRORS[code].status, `${method} ${path} ${status} ${code}`).toBe(Number(status));
          expect(op.responses[status].description).toContain(code);
        }
      }
    }
    const trigger = doc.paths['/v1/campaign/{id}/loyalty-action']!.post!;
    expect(Object.keys(trigger.responses)).toEqual(expect.arrayContaining(['402', '409', '422', '429']));
  });

  it('declares the rate headers on every public answer but a 403, and a 429 on every public operation', () => {
    const headers = (doc.components as unknown as { headers: Record<string, unknown> }).headers;
    expect(Object.keys(headers)).toEqual(
      expect.arrayContaining([
        'Stampcard-RateLimit-Second-Limit',
        'Stampcard-RateLimit-Hour-Remaining',
        'Stampcard-Retry-After-Minute-Milliseconds',
        'RateLimit-Policy',
        'RateLimit',
      ]),
    );
    const publicOps = operations.filter(({ path }) => path.startsWith('/v1/'));
    expect(publicOps.length).toBeGreaterThan(10);
    for (const { method, path, op } of publicOps) {
      expect(Object.keys(op.responses), `${method} ${path}`).toContain('429');
      for (const [status, response] of Object.entries(op.responses)) {
        const declared = Object.keys(response.headers ?? {});
        if (status === '403') expect(declared, `${method} ${path} ${status}`).not.toContain('RateLimit');
        else
          expect(declared, `${method} ${path} ${status}`).toContain('Stampcard-RateLimit-Second-Remaining');
      }
    }
    for (const { path, op } of operations.filter(({ path }) => path.startsWith('/admin/')))
      expect(Object.keys(op.responses['200']?.headers ?? {}), path).not.toContain('RateLimit');
  });

  it('names the security scheme of each API and puts the operator API under its own tags', () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes.ApiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.OperatorToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const { method, path, op } of operations) {
      const operator = path.startsWith('/admin/v1/');
      expect(op.security, `${method} ${path}`).toEqual([{ [operator ? 'OperatorToken' : 'ApiKey']: [] }]);
      expect(op.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
      for (const tag of op.tags ?? [])
        expect(tag.startsWith('Operator: '), `${method} ${path}`).toBe(operator);
    }
  });

  it('answers without the request deadline of /v1 (a 1 ms budget still gets the document and the page)', async () => {
    // Imported here, not at the top: this file loads core before the API (as `scripts/stack.ts` does), so core's
    // schemas are made before `@hono/zod-openapi` extends zod, and the document must not depend on that order.
    const { createApp } = await import('@stampcard/api');
    const app = createApp({ ...stack.deps, requestTimeoutMs: 1 });
    for (const path of [OPENAPI_PATH, DOCS_PATH]) expect((await app.request(path)).status, path).toBe(200);
    const html = await (await app.request(DOCS_PATH)).text();
    const script = html.match(/<script src="([^"]+)"/)![1]!;
    expect((await app.request(script)).status).toBe(200);
  });
});

describe('GET /v1/docs', () => {
  it('answers an HTML page without an API key, with scripts and styles from this service only', async () => {
    const res = await stack.app.request(DOCS_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    const urls = [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)]
      .map((m) => m[1]!)
      .filter((url) => !url.startsWith('data:'));
    expect(urls.length).toBeGreaterThanOrEqual(2);
    for (const url of urls) expect(url, url).toMatch(/^\/(?!\/)/);
    expect(html).not.toMatch(/cdn\.|unpkg|jsdelivr|https?:\/\/[^"\s]*\.js/);
    const csp = res.headers.get('content-security-policy') ?? '';
    const scriptSrc = csp.split(';').find((d) => d.trim().startsWith('script-src')) ?? '';
    expect(scriptSrc).toContain("'self'");
    expect(scriptSrc).not.toMatch(/https?:|\*/);
    // Each file the page loads is served here, without a key.
    for (const url of urls) {
      const asset = await stack.app.request(url);
      expect(asset.status, url).toBe(200);
      expect(asset.headers.get('content-type'), url).toMatch(/^text\/(css|javascript)/);
    }
    expect(html).toContain(`SwaggerUIBundle`);
    expect(html).toContain(`url: '${OPENAPI_PATH}'`);
  });

  it('has an errors section that describes every error code', async () => {
    const html = await (await stack.app.request(DOCS_PATH)).text();
    const section = html.slice(html.indexOf('<section id="errors"'));
    expect(html).toContain('<section id="errors"');
    for (const [code, { name, status }] of Object.entries(HTTP_ERRORS)) {
      expect(section).toContain(
        `<tr id="error-${code}"><td>${status}</td><td><code>${code}</code></td><td>${name}</td>`,
      );
    }
  });

  it("is where an error body's supportUrl points", async () => {
    const body = expectErrorShape(
      await client(inProcess(stack.app)).get('/v1/campaigns'),
      403,
      'NOT_AUTHORIZED',
    );
    const url = new URL(body.supportUrl);
    expect(url.pathname).toBe(DOCS_PATH);
    expect(url.hash).toBe('#errors');
    const page = await stack.app.request(url.pathname);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`id="${url.hash.slice(1)}"`);
  });
});

describe('answers match the document', () => {
  const uid = () => randomBytes(5).toString('hex');
  let validators: Map<string, (body: unknown) => string | null>;

  beforeAll(() => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema(doc, 'openapi');
    validators = new Map();
    for (const { method, path, op } of operations) {
      const schema = op.responses['200'].content['application/json'].schema;
      const validate = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')),
      );
      validators.set(`${method} ${path}`, (body) =>
        validate(body) ? null : ajv.errorsText(validate.errors, { separator: '\n' }),
      );
    }
  });

  it('has error examples that are bodies of the codes their status carries', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema(doc, 'openapi');
    const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
    let examples = 0;
    for (const { method, path, op } of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (status === '200') continue;
        const media = response.content['application/json'];
        const text = JSON.stringify(media.schema).replaceAll('"#/components/', '"openapi#/components/');
        const validate = compiled.get(text) ?? ajv.compile(JSON.parse(text));
        compiled.set(text, validate);
        for (const [code, example] of Object.entries<{ value: { code: string; status: number } }>(
          media.examples,
        )) {
          expect(example.value.code).toBe(code);
          expect(example.value.status).toBe(Number(status));
          expect(validate(example.value), `${method} ${path} ${status} ${code}`).toBe(true);
          examples++;
        }
      }
    }
    expect(examples).toBeGreaterThan(operations.length * 4);
  });

  const checked = new Set<string>();
  /** The 200 answer, checked against the schema of its operation in the document. */
  function conforms(method: string, template: string, reply: Reply) {
    if (reply.status !== 200) {
      throw new Error(`${method} ${template}: ${reply.status} ${JSON.stringify(reply.body)}`);
    }
    const key = `${method.toLowerCase()} ${template}`;
    const validate = validators.get(key);
    if (!validate) throw new Error(`${key} is not in the document`);
    expect(validate(reply.body), `${key}\n${JSON.stringify(reply.body).slice(0, 2000)}`).toBeNull();
    checked.add(key);
    return reply.body;
  }

  it('for every operation, through a whole program', async () => {
    const op = client(inProcess(stack.app), OPERATOR_TOKEN);
    const account = conforms(
      'POST',
      '/admin/v1/accounts',
      await op.post('/admin/v1/accounts', {
        name: `Docs ${uid()}`,
        plan: 'GROWTH',
        rateLimits: { minute: 1000 },
      }),
    );
    const user = conforms(
      'POST',
      '/admin/v1/accounts/{accountId}/users',
      await op.post(`/admin/v1/accounts/${account.id}/users`, {
        email: `docs-${uid()}@example.com`,
        role: 'ADMIN',
      }),
    );
    const key = conforms(
      'POST',
      '/admin/v1/users/{userId}/api-keys',
      await op.post(`/admin/v1/users/${user.id}/api-keys`),
    );
    const campaign = conforms(
      'POST',
      '/admin/v1/accounts/{accountId}/campaigns',
      await op.post(`/admin/v1/accounts/${account.id}/campaigns`, {
        name: 'Docs program',
        antiFraud: { level: 'STANDARD' },
      }),
    );
    const reward = conforms(
      'POST',
      '/admin/v1/campaigns/{id}/rewards',
      await op.post(`/admin/v1/campaigns/${campaign.id}/rewards`, {
        title: 'Free coffee',
        conversionsRequired: 1,
        submissionFormFields: [{ key: 'size', isRequired: true }],
        metadata: { tier: 'gold' },
      }),
    );
    conforms(
      'PATCH',
      '/admin/v1/campaigns/{id}/rewards/{rewardId}',
      await op.patch(`/admin/v1/campaigns/${campaign.id}/rewards/${reward.id}`, { couponCode: 'COFFEE' }),
    );
    conforms(
      'PATCH',
      '/admin/v1/campaigns/{id}',
      await op.patch(`/admin/v1/campaigns/${campaign.id}`, { status: 'IN_PROGRESS' }),
    );
    conforms('GET', '/admin/v1/campaigns/{id}', await op.get(`/admin/v1/campaigns/${campaign.id}`));
    conforms('GET', '/admin/v1/queues', await op.get('/admin/v1/queues'));
    // The operator's reads, and a team member's change.
    conforms('GET', '/admin/v1/accounts', await op.get('/admin/v1/accounts?limit=1'));
    conforms('GET', '/admin/v1/accounts/{accountId}', await op.get(`/admin/v1/accounts/${account.id}`));
    conforms(
      'GET',
      '/admin/v1/accounts/{accountId}/campaigns',
      await op.get(`/admin/v1/accounts/${account.id}/campaigns`),
    );
    conforms(
      'GET',
      '/admin/v1/accounts/{accountId}/users',
      await op.get(`/admin/v1/accounts/${account.id}/users`),
    );
    conforms('GET', '/admin/v1/users/{userId}', await op.get(`/admin/v1/users/${user.id}`));
    conforms(
      'PATCH',
      '/admin/v1/users/{userId}',
      await op.patch(`/admin/v1/users/${user.id}`, { campaignIds: [campaign.id] }),
    );
    const keys = conforms('GET', '/admin/v1/api-keys', await op.get(`/admin/v1/api-keys?userId=${user.id}`));
    expect(keys.apiKeys).toEqual([expect.objectContaining({ id: key.id, keyPrefix: key.keyPrefix })]);
    conforms('GET', '/admin/v1/api-keys/{keyId}', await op.get(`/admin/v1/api-keys/${key.id}`));
    conforms(
      'GET',
      '/admin/v1/campaigns/{id}/rewards',
      await op.get(`/admin/v1/campaigns/${campaign.id}/rewards`),
    );
    conforms(
      'GET',
      '/admin/v1/campaigns/{id}/rewards/{rewardId}',
      await op.get(`/admin/v1/campaigns/${campaign.id}/rewards/${reward.id}`),
    );

    // Webhook endpoints and messages (no dispatcher runs: messages stay as made).
    const endpoint = conforms(
      'POST',
      '/admin/v1/campaigns/{id}/webhook-endpoints',
      await op.post(`/admin/v1/campaigns/${campaign.id}/webhook-endpoints`, {
        url: 'http://127.0.0.1:9/hook',
        enabled: false,
      }),
    );
    expect(endpoint.secret).toMatch(/^whsec_/);
    const ep = `/admin/v1/webhook-endpoints/${endpoint.id}`;
    conforms(
      'GET',
      '/admin/v1/campaigns/{id}/webhook-endpoints',
      await op.get(`/admin/v1/campaigns/${campaign.id}/webhook-endpoints`),
    );
    conforms('GET', '/admin/v1/webhook-endpoints/{id}', await op.get(ep));
    conforms(
      'POST',
      '/admin/v1/webhook-endpoints/{id}/rotate-secret',
      await op.post(`${ep}/rotate-secret`, {}),
    );
    conforms(
      'DELETE',
      '/admin/v1/webhook-endpoints/{id}/previous-secret',
      await op.delete(`${ep}/previous-secret`),
    );
    const test = conforms('POST', '/admin/v1/webhook-endpoints/{id}/test', await op.post(`${ep}/test`));
    conforms('GET', '/admin/v1/webhook-endpoints/{id}/messages', await op.get(`${ep}/messages`));
    conforms(
      'GET',
      '/admin/v1/webhook-messages/{id}',
      await op.get(`/admin/v1/webhook-messages/${test.messageId}`),
    );
    conforms(
      'POST',
      '/admin/v1/webhook-messages/{id}/replay',
      await op.post(`/admin/v1/webhook-messages/${test.messageId}/replay`),
    );
    conforms('POST', '/admin/v1/webhook-endpoints/{id}/replay', await op.post(`${ep}/replay`, {}));
    conforms(
      'POST',
      '/admin/v1/webhook-endpoints/{id}/discard-pending',
      await op.post(`${ep}/discard-pending`),
    );
    conforms('PATCH', '/admin/v1/webhook-endpoints/{id}', await op.patch(ep, { description: 'CRM' }));

    // The public API, with the key the operator issued.
    const api = client(inProcess(stack.app), key.key);
    const email = `ada-${uid()}@example.com`;
    conforms('GET', '/v1/campaigns', await api.get('/v1/campaigns'));
    conforms('GET', '/v1/campaign/{id}', await api.get(`/v1/campaign/${campaign.id}`));
    const queued = conforms(
      'POST',
      '/v1/campaign/{id}/loyalty-action',
      await api.post(`/v1/campaign/${campaign.id}/loyalty-action`, {
        participantEmail: email,
        rewardId: reward.id,
        firstName: 'Ada',
        metadata: { points: 5 },
      }),
    );
    expect(queued.action.status).toBe('QUEUED');
    const applied = conforms(
      'POST',
      '/v1/campaign/{id}/participant/{participantId}/loyalty-action',
      await api.post(
        `/v1/campaign/${campaign.id}/participant/${queued.action.participantId}/loyalty-action?wait=true`,
        { rewardId: reward.id },
      ),
    );
    expect(applied.action.status).toBe('APPLIED');
    conforms(
      'GET',
      '/v1/campaign/{id}/loyalty-action/{actionId}',
      await api.get(`/v1/campaign/${campaign.id}/loyalty-action/${applied.action.id}`),
    );
    const participant = conforms(
      'GET',
      '/v1/campaign/{id}/participant/{idOrEmail}',
      await api.get(`/v1/campaign/${campaign.id}/participant/${email}`),
    );
    expect(participant.rewards?.length ?? 0).toBeGreaterThan(0);
    const added = conforms(
      'POST',
      '/v1/campaign/{id}/participant',
      await api.post(`/v1/campaign/${campaign.id}/participant`, {
        email: `grace-${uid()}@example.com`,
        firstName: 'Grace',
        metadata: { points: 5 },
      }),
    );
    conforms(
      'POST',
      '/v1/campaign/{id}/participant/{idOrEmail}',
      await api.post(`/v1/campaign/${campaign.id}/participant/${added.id}`, { lastName: 'Hopper' }),
    );
    conforms(
      'PATCH',
      '/v1/campaign/{id}/participant/{idOrEmail}',
      await api.patch(`/v1/campaign/${campaign.id}/participant/${added.email}`, {
        metadata: { tier: 'gold' },
        metadataIncrement: { points: 20 },
      }),
    );
    conforms(
      'GET',
      '/v1/campaign/{id}/participants',
      await api.get(`/v1/campaign/${campaign.id}/participants`),
    );
    // Manual review on the operator API: a level set by hand (the feed below then carries its event).
    const reviewed = conforms(
      'PATCH',
      '/admin/v1/campaigns/{id}/participants/{idOrEmail}',
      await op.patch(`/admin/v1/campaigns/${campaign.id}/participants/${added.email}`, {
        fraudRiskLevel: 'HIGH',
      }),
    );
    expect(reviewed).toMatchObject({
      id: added.id,
      fraudRiskLevel: 'HIGH',
      fraudReasonCode: 'MANUAL_UPDATE',
    });
    const byRisk = conforms(
      'GET',
      '/admin/v1/campaigns/{id}/participants',
      await op.get(`/admin/v1/campaigns/${campaign.id}/participants?limit=1`),
    );
    expect(byRisk).toMatchObject({
      participants: [{ id: added.id }],
      more: true,
      nextId: expect.any(String),
    });
    const leaders = conforms(
      'GET',
      '/v1/campaign/{id}/leaderboard',
      await api.get(`/v1/campaign/${campaign.id}/leaderboard?leaderboardType=CURRENT_MONTH`),
    );
    expect(leaders.participants[0]).toMatchObject({ email, monthlyRank: 1 });
    conforms(
      'DELETE',
      '/v1/campaign/{id}/participant/{idOrEmail}',
      await api.delete(`/v1/campaign/${campaign.id}/participant/${added.id}`),
    );
    conforms(
      'GET',
      '/v1/campaign/{id}/participant/{participantId}/erasure',
      await api.get(`/v1/campaign/${campaign.id}/participant/${added.id}/erasure`),
    );
    const feed = await eventually(
      () => api.get(`/v1/campaign/${campaign.id}/events?limit=100`),
      (r) => r.status === 200 && r.body.events.length >= 3,
    );
    conforms('GET', '/v1/campaign/{id}/events', feed);

    // Form submissions: sent, listed, read, approved; another sent and rejected.
    const formReward = await op.post(`/admin/v1/campaigns/${campaign.id}/rewards`, {
      title: 'Review us',
      conversionsRequired: 1,
      submissionType: 'FORM',
      submissionFormFields: [{ key: 'url', label: 'Review link', isRequired: true }],
    });
    expect(formReward.status).toBe(200);
    const formPath = `/v1/campaign/${campaign.id}/participant/${email}/form-submission`;
    const formBody = { rewardId: formReward.body.id, formData: { url: 'https://example.com/review' } };
    const submissionPath = (id: string) => `/v1/campaign/${campaign.id}/form-submission/${id}`;
    const sent = conforms(
      'POST',
      '/v1/campaign/{id}/participant/{idOrEmail}/form-submission',
      await api.post(formPath, formBody),
    );
    conforms(
      'GET',
      '/v1/campaign/{id}/form-submissions',
      await api.get(`/v1/campaign/${campaign.id}/form-submissions?status=UNREVIEWED`),
    );
    conforms(
      'GET',
      '/v1/campaign/{id}/form-submission/{submissionId}',
      await api.get(submissionPath(sent.id)),
    );
    conforms(
      'POST',
      '/v1/campaign/{id}/form-submission/{submissionId}/approve',
      await api.post(`${submissionPath(sent.id)}/approve`),
    );
    const resent = await api.post(formPath, formBody);
    conforms(
      'POST',
      '/v1/campaign/{id}/form-submission/{submissionId}/reject',
      await api.post(`${submissionPath(resent.body.id)}/reject`),
    );

    // A participant's rewards: listed and fulfilled; then, under manual approval, one approved, one removed.
    const earned = conforms(
      'GET',
      '/v1/campaign/{id}/participant/{idOrEmail}/rewards',
      await api.get(`/v1/campaign/${campaign.id}/participant/${email}/rewards`),
    );
    const rewardPath = (id: string) => `/v1/campaign/${campaign.id}/reward/${id}`;
    conforms(
      'POST',
      '/v1/campaign/{id}/reward/{participantRewardId}/fulfill',
      await api.post(`${rewardPath(earned.rewards[0].id)}/fulfill`),
    );
    expect(
      (await op.patch(`/admin/v1/campaigns/${campaign.id}`, { requireRewardApproval: true })).status,
    ).toBe(200);
    const waitingReward = async () => {
      const res = await api.post(`/v1/campaign/${campaign.id}/loyalty-action?wait=true`, {
        participantEmail: `bo-${uid()}@example.com`,
        rewardId: reward.id,
      });
      expect(res.body.action.unlockedRewards[0].approved).toBe(false);
      return res.body.action.unlockedRewards[0].id as string;
    };
    conforms(
      'POST',
      '/v1/campaign/{id}/reward/{participantRewardId}/approve',
      await api.post(`${rewardPath(await waitingReward())}/approve`, { fulfill: true }),
    );
    conforms(
      'DELETE',
      '/v1/campaign/{id}/reward/{participantRewardId}',
      await api.delete(rewardPath(await waitingReward())),
    );

    conforms('DELETE', '/admin/v1/webhook-endpoints/{id}', await op.delete(ep));
    conforms('DELETE', '/admin/v1/api-keys/{keyId}', await op.delete(`/admin/v1/api-keys/${key.id}`));

    // A new operation is called above too, so that its answer is held to its documented schema.
    expect(
      [...validators.keys()].filter((k) => !checked.has(k)),
      'operations this test did not call',
    ).toEqual([]);
  });
});
