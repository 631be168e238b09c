import { randomBytes } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ERROR_CATALOG, type ErrorCode, EVENT_SCHEMAS } from '@stampcard/core';
import Ajv2020 from 'ajv/dist/2020';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { client, eventually, expectErrorShape, inProcess, type Reply } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { DOCS_PATH, OPENAPI_PATH } from '../src/docs/index';
import { HTTP_ERRORS } from '../src/lib/error-status';

const stack = useTestStack();

type Schema = Record<string, any>;
type Operation = {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: Schema[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema; encoding?: Schema }> };
  responses: Record<string, any>;
};
type Doc = {
  openapi: string;
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Schema>;
    securitySchemes: Record<string, Schema>;
    headers: Record<string, Schema>;
    parameters: Record<string, Schema>;
  };
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

/** The liveness and readiness probes: no key, no rate limits. */
const isProbe = (path: string) => !path.startsWith('/v1/') && !path.startsWith('/admin/');

/** The route paths, as Hono registered them, that are not operations of the API. */
const notOperations = (path: string) =>
  // Pages for browsers, not API operations: the queue dashboard, the console, the docs. And the scrape of a
  // Prometheus server, in its text format (docs/operating.md).
  path === '/metrics' ||
  path === '/admin/queues' ||
  path === '/console' ||
  path.startsWith('/console/') ||
  path === '/portal' ||
  path.startsWith('/portal/') ||
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
      const content: Record<string, { schema?: any }> = op.responses['200']?.content ?? {};
      const schema = content['application/json']?.schema;
      if (schema) return !typed(schema);
      // A file (an export): each media type it is served as, a string.
      const files = Object.values(content);
      return files.length === 0 || files.some((c) => c.schema?.type !== 'string');
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
      const statuses = Object.keys(op.responses).filter((s) => !s.startsWith('2'));
      // Every route can refuse its input, its caller, or fail; a probe has no caller to refuse.
      expect(statuses, `${method} ${path}`).toEqual(
        expect.arrayContaining(isProbe(path) ? ['400', '500'] : ['400', '403', '500', '503']),
      );
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
      if (isProbe(path)) {
        expect(op.security, `${method} ${path}`).toEqual([]);
        expect(op.tags).toEqual(['Service']);
        continue;
      }
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

/** Every `{ $ref }` resolved, wherever it points in the document. */
function deref(value: Schema): Schema {
  if (typeof value?.$ref !== 'string') return value;
  const found = value.$ref
    .slice(2)
    .split('/')
    .reduce((at: any, key: string) => at?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  if (!found) throw new Error(`dangling $ref ${value.$ref}`);
  return deref(found);
}

describe('the document says what the service does', () => {
  const webhookOps = () =>
    Object.entries(doc.webhooks).flatMap(([name, item]) =>
      Object.entries(item).map(([method, op]) => ({ method, path: name, op })),
    );

  it('names every operation and webhook by a unique operationId, after the route file', () => {
    const all = [...operations, ...webhookOps()];
    const ids = all.map(({ op }) => op.operationId);
    expect(all.filter(({ op }) => !op.operationId).map((o) => `${o.method} ${o.path}`)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { method, path, op } of operations) {
      const id = op.operationId!;
      // Operator routes: `admin` + PascalCase; public ones: camelCase verb-noun.
      if (path.startsWith('/admin/')) expect(id, `${method} ${path}`).toMatch(/^admin[A-Z][A-Za-z]+$/);
      else expect(id, `${method} ${path}`).toMatch(/^(?!admin|webhook)[a-z]+[A-Z][A-Za-z]*$/);
    }
    for (const { path, op } of webhookOps()) expect(op.operationId, path).toMatch(/^webhook[A-Z][A-Za-z]+$/);
    expect(doc.paths['/v1/campaign/{id}']!.get!.operationId).toBe('getCampaign');
    expect(doc.paths['/v1/campaign/{id}/loyalty-action']!.post!.operationId).toBe('triggerLoyaltyAction');
    expect(doc.paths['/admin/v1/campaigns/{id}']!.get!.operationId).toBe('adminGetCampaign');
  });

  it('names its server, and declares X-Request-Id on every answer and Retry-After on every 429', () => {
    expect(doc.servers?.[0]?.url).toBe('/');
    expect(doc.components.parameters.RequestId).toMatchObject({ name: 'X-Request-Id', in: 'header' });
    for (const { method, path, op } of operations) {
      expect(op.parameters, `${method} ${path}`).toContainEqual({
        $ref: '#/components/parameters/RequestId',
      });
      for (const [status, response] of Object.entries(op.responses)) {
        const headers = Object.keys(response.headers ?? {});
        expect(headers, `${method} ${path} ${status}`).toContain('X-Request-Id');
        if (status === '429') expect(headers, `${method} ${path} ${status}`).toContain('Retry-After');
      }
    }
  });

  it('bounds metadata by maxProperties, and ipAddress by the standard formats', () => {
    const add = doc.components.schemas.AddParticipant!;
    expect(add.properties.metadata).toMatchObject({
      maxProperties: 100,
      propertyNames: { minLength: 1, maxLength: 255 },
    });
    expect(add.properties.ipAddress.anyOf.map((s: Schema) => s.format)).toEqual(['ipv4', 'ipv6']);
    expect(JSON.stringify(doc)).not.toContain('"format":"ip"');
  });

  it('requires in a request what zod requires of its input, and in an answer what it always outputs', () => {
    let compared = 0;
    for (const definition of stack.app.openAPIRegistry.definitions) {
      if (definition.type !== 'route') continue;
      const { method, path, request, responses } = definition.route;
      const op = doc.paths[path]![method]!;
      const pairs: [z.ZodType | undefined, Schema | undefined, 'input' | 'output'][] = [
        [
          (request?.body?.content?.['application/json'] as { schema?: z.ZodType } | undefined)?.schema,
          op.requestBody?.content['application/json']?.schema,
          'input',
        ],
        [
          (responses[200] as { content?: { 'application/json'?: { schema?: z.ZodType } } } | undefined)
            ?.content?.['application/json']?.schema,
          op.responses['200']?.content?.['application/json']?.schema,
          'output',
        ],
      ];
      for (const [zodSchema, documented, io] of pairs) {
        if (!zodSchema || !documented) continue;
        const fromZod = z.toJSONSchema(zodSchema, { io, unrepresentable: 'any' }) as Schema;
        if (fromZod.type !== 'object') continue;
        const resolved = deref(documented);
        const required = resolved.required ?? resolved.allOf?.flatMap((s: Schema) => deref(s).required ?? []);
        expect([...(required ?? [])].sort(), `${method} ${path} ${io}`).toEqual(
          [...(fromZod.required ?? [])].sort(),
        );
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(operations.length);
    // The field with a default is one a request may leave out.
    expect(doc.components.schemas.TriggerLoyaltyActionByEmail!.required).not.toContain(
      'addParticipantIfNoneExists',
    );
  });

  it('marks a body required exactly where an empty body is refused', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const op = client(inProcess(stack.app), OPERATOR_TOKEN);
    let optional = 0;
    for (const { method, path, op: operation } of operations) {
      if (!operation.requestBody) continue;
      // Ids nobody has: a body that passes validation reaches the handler, which answers 404.
      const url = path.replace('{id}', 'nothing9').replace(/\{[^}]+\}/g, 'nothing9');
      const caller = path.startsWith('/admin/') ? op : api;
      const reply = method === 'post' ? await caller.post(url) : await caller.patch(url);
      const key = `${method} ${path}`;
      if (operation.requestBody.required) {
        expectErrorShape(reply, 400, 'VALIDATION_ERROR');
      } else {
        optional++;
        // Without an id in its path, an optional body left out is a request that succeeds.
        expect(reply.status, `${key}: ${JSON.stringify(reply.body)}`).toBe(path.includes('{') ? 404 : 200);
      }
    }
    expect(optional).toBeGreaterThanOrEqual(3);
  });

  it('declares the form-encoded twin of the bodies it can describe, and takes them', async () => {
    const trigger = doc.paths['/v1/campaign/{id}/loyalty-action']!.post!.requestBody!;
    expect(trigger.content['application/x-www-form-urlencoded']).toMatchObject({
      schema: trigger.content['application/json']!.schema,
      encoding: { metadata: { style: 'deepObject', explode: true } },
    });
    // An array has no OpenAPI form style matching `name[]=a`: that body is declared as JSON only.
    const endpoint = doc.paths['/admin/v1/campaigns/{id}/webhook-endpoints']!.post!.requestBody!;
    expect(Object.keys(endpoint.content)).toEqual(['application/json']);
    // Every public body but those with an array (a webhook endpoint's `eventTypes`), which no OpenAPI style writes.
    const resolved = (schema: any): any =>
      schema?.$ref ? doc.components.schemas[schema.$ref.split('/').at(-1)] : schema;
    const hasArray = (schema: any) =>
      Object.values(resolved(schema)?.properties ?? {}).some((f: any) =>
        [f, ...(f.anyOf ?? [])].some((k: any) => resolved(k)?.type === 'array'),
      );
    const publicForms = operations.filter(
      ({ path, op }) =>
        path.startsWith('/v1/') &&
        op.requestBody?.content['application/json'] &&
        // An import's body is a file (or the rows of one), never form fields.
        !op.requestBody.content['text/csv'] &&
        !hasArray(op.requestBody.content['application/json'].schema),
    );
    expect(publicForms.length).toBeGreaterThan(10);
    for (const { method, path, op } of publicForms)
      expect(Object.keys(op.requestBody!.content), `${method} ${path}`).toContain(
        'application/x-www-form-urlencoded',
      );

    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail();
    const res = await stack.app.request(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.key}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        participantEmail: email,
        rewardId: w.reward.id,
        addParticipantIfNoneExists: 'true',
        'metadata[points]': '5',
      }).toString(),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as { action: { status: string } }).action.status).toBe('QUEUED');
  });

  it('describes in webhooks every event type and the test message, with the Standard Webhooks headers', () => {
    const types = Object.keys(doc.webhooks).sort();
    expect(types).toEqual([...Object.keys(EVENT_SCHEMAS), 'WEBHOOK_TEST'].sort());
    for (const [type, item] of Object.entries(doc.webhooks)) {
      const post = item.post!;
      const headers = (post.parameters ?? []).map((p) => deref(p)).filter((p) => p.in === 'header');
      expect(headers.filter((h) => h.required).map((h) => h.name)).toEqual(
        expect.arrayContaining(['webhook-id', 'webhook-timestamp', 'webhook-signature']),
      );
      const body = deref(post.requestBody!.content['application/json']!.schema);
      // The body a receiver gets: the event's id is a header, never a field.
      expect(Object.keys(body.properties).sort(), type).toEqual(['data', 'timestamp', 'type']);
      expect(body.required.sort(), type).toEqual(['data', 'timestamp', 'type']);
      expect(body.properties.type.enum, type).toEqual([type]);
    }
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
  let ajv: Ajv2020;
  const compiled = new Map<string, (body: unknown) => string | null>();

  beforeAll(() => {
    ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema(doc, 'openapi');
  });

  /** The declared body of an operation's answer of this status, as a validator (null when none is declared). */
  function validatorFor(key: string, op: Operation, status: number, mediaType = 'application/json') {
    const id = `${key} ${status} ${mediaType}`;
    let validate = compiled.get(id);
    if (!validate) {
      const schema = op.responses[String(status)]?.content?.[mediaType]?.schema;
      if (!schema) throw new Error(`${id}: no such answer in the document`);
      const check = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')),
      );
      validate = (body) => (check(body) ? null : ajv.errorsText(check.errors, { separator: '\n' }));
      compiled.set(id, validate);
    }
    return validate;
  }

  const checked = new Set<string>();
  /**
   * The answer, checked against its operation in the document: its status is declared, its body matches that
   * status's schema, and it carries the headers every answer of that status declares it always has.
   */
  function answers(method: string, template: string, reply: Reply, status = 200) {
    const key = `${method.toLowerCase()} ${template}`;
    const op = doc.paths[template]?.[method.toLowerCase()];
    if (!op) throw new Error(`${key} is not in the document`);
    if (reply.status !== status) {
      throw new Error(`${key}: ${reply.status} ${JSON.stringify(reply.body)}, expected ${status}`);
    }
    // The media type the answer says it is (a file's, for an export), as the document lists it.
    const mediaType = (reply.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const validate = validatorFor(
      key,
      op,
      status,
      mediaType === 'text/csv' || mediaType === 'application/x-ndjson' ? mediaType : 'application/json',
    );
    expect(validate(reply.body), `${key} ${status}\n${JSON.stringify(reply.body).slice(0, 2000)}`).toBeNull();
    expect(reply.headers.get('x-request-id'), `${key} ${status}`).toBeTruthy();
    if (status === 429) expect(Number(reply.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    if (status === 200 || status === 202) checked.add(key);
    return reply.body;
  }
  const conforms = (method: string, template: string, reply: Reply) => answers(method, template, reply);

  it('for a sample of refusals: each status is declared, and its body and headers are as declared', async () => {
    const anonymous = client(inProcess(stack.app));
    const op = client(inProcess(stack.app), OPERATOR_TOKEN);
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const trigger = '/v1/campaign/{id}/loyalty-action';
    const triggerPath = (id: string) => `/v1/campaign/${id}/loyalty-action`;

    answers('GET', '/health', await anonymous.get('/health?probe=%00'), 400);
    answers('GET', '/v1/campaigns', await anonymous.get('/v1/campaigns'), 403);
    answers('GET', '/v1/campaign/{id}', await api.get('/v1/campaign/nothing9'), 404);
    answers(
      'POST',
      trigger,
      await api.post(triggerPath(w.campaign.id), { participantEmail: 'nope', rewardId: w.reward.id }),
      400,
    );
    const draft = await makeWorld(stack.ctx, { campaign: { status: 'DRAFT' } });
    const inDraft = await client(inProcess(stack.app), draft.key).post(triggerPath(draft.campaign.id), {
      participantEmail: uniqueEmail(),
      rewardId: draft.reward.id,
    });
    expect(answers('POST', trigger, inDraft, 400).code).toBe('INVALID_STATE');
    const full = await makeWorld(stack.ctx, { account: { participantQuota: 0 } });
    answers(
      'POST',
      '/v1/campaign/{id}/participant',
      await client(inProcess(stack.app), full.key).post(`/v1/campaign/${full.campaign.id}/participant`, {
        email: uniqueEmail(),
      }),
      402,
    );
    const guarded = await makeWorld(stack.ctx, {
      campaign: { antiFraud: { level: 'OFF', blacklist: ['*@spam.example'] } },
    });
    answers(
      'POST',
      trigger,
      await client(inProcess(stack.app), guarded.key).post(triggerPath(guarded.campaign.id), {
        participantEmail: 'eve@spam.example',
        rewardId: guarded.reward.id,
      }),
      422,
    );
    const limited = await makeWorld(stack.ctx, {
      account: { rateLimits: { second: 1, minute: 100, hour: 1000, concurrency: 10, slowdownAfter: 0 } },
    });
    const slow = client(inProcess(stack.app), limited.key);
    answers('GET', '/v1/campaigns', await slow.get('/v1/campaigns'));
    const refused = answers('GET', '/v1/campaigns', await slow.get('/v1/campaigns'), 429);
    expect(refused.policyName).toBe('SECOND');
    answers('GET', '/admin/v1/campaigns/{id}', await op.get('/admin/v1/campaigns/nothing9'), 404);
    answers(
      'GET',
      '/admin/v1/queues',
      await client(inProcess(stack.app), 'not-the-operator-token').get('/admin/v1/queues'),
      403,
    );
    answers(
      'PATCH',
      '/admin/v1/campaigns/{id}',
      await op.patch(`/admin/v1/campaigns/${w.campaign.id}`, { status: 'NOT_A_STATUS' }),
      400,
    );
  });

  it('has error examples that are bodies of the codes their status carries', () => {
    const examplesAjv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    examplesAjv.addSchema(doc, 'openapi');
    const compiledExamples = new Map<string, ReturnType<typeof examplesAjv.compile>>();
    let examples = 0;
    for (const { method, path, op } of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (status.startsWith('2')) continue;
        const media = response.content['application/json'];
        const text = JSON.stringify(media.schema).replaceAll('"#/components/', '"openapi#/components/');
        const validate = compiledExamples.get(text) ?? examplesAjv.compile(JSON.parse(text));
        compiledExamples.set(text, validate);
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

  it('for every operation, through a whole program', async () => {
    const probe = client(inProcess(stack.app));
    conforms('GET', '/health', await probe.get('/health'));
    conforms('GET', '/ready', await probe.get('/ready'));
    conforms('GET', '/livez', await probe.get('/livez'));
    conforms('GET', '/readyz', await probe.get('/readyz'));
    const op = client(inProcess(stack.app), OPERATOR_TOKEN);
    const account = conforms(
      'POST',
      '/admin/v1/accounts',
      await op.post('/admin/v1/accounts', {
        name: `Docs ${uid()}`,
        plan: 'GROWTH',
        rateLimits: { second: 1000, minute: 1000 },
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
    const retention = conforms('GET', '/admin/v1/retention', await op.get('/admin/v1/retention'));
    expect(retention.tables.map((t: { table: string }) => t.table)).toEqual([
      'events',
      'webhook_messages',
      'webhook_attempts',
      'audit_log',
      'idempotency_keys',
    ]);
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
    conforms(
      'PATCH',
      '/admin/v1/accounts/{accountId}',
      await op.patch(`/admin/v1/accounts/${account.id}`, { frameAncestors: ['https://app.example.com'] }),
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

    /**
     * Webhook endpoints and messages (no dispatcher runs: messages stay as made), on the operator API and on the
     * public one (an ADMIN key's own), the same operations under each prefix. Answers the endpoint's path.
     */
    const webhookOperations = async (caller: typeof op, prefix: string, campaignPath: string) => {
      const endpoint = conforms(
        'POST',
        `${campaignPath}/{id}/webhook-endpoints`,
        await caller.post(`${campaignPath}/${campaign.id}/webhook-endpoints`, {
          url: 'http://127.0.0.1:9/hook',
          enabled: false,
        }),
      );
      expect(endpoint.secret).toMatch(/^whsec_/);
      const ep = `${prefix}/webhook-endpoints/${endpoint.id}`;
      conforms(
        'GET',
        `${campaignPath}/{id}/webhook-endpoints`,
        await caller.get(`${campaignPath}/${campaign.id}/webhook-endpoints`),
      );
      conforms('GET', `${prefix}/webhook-endpoints/{id}`, await caller.get(ep));
      conforms(
        'POST',
        `${prefix}/webhook-endpoints/{id}/rotate-secret`,
        await caller.post(`${ep}/rotate-secret`, {}),
      );
      conforms(
        'DELETE',
        `${prefix}/webhook-endpoints/{id}/previous-secret`,
        await caller.delete(`${ep}/previous-secret`),
      );
      const test = conforms('POST', `${prefix}/webhook-endpoints/{id}/test`, await caller.post(`${ep}/test`));
      conforms('GET', `${prefix}/webhook-endpoints/{id}/messages`, await caller.get(`${ep}/messages`));
      conforms(
        'GET',
        `${prefix}/webhook-messages/{id}`,
        await caller.get(`${prefix}/webhook-messages/${test.messageId}`),
      );
      conforms(
        'POST',
        `${prefix}/webhook-messages/{id}/replay`,
        await caller.post(`${prefix}/webhook-messages/${test.messageId}/replay`),
      );
      conforms('POST', `${prefix}/webhook-endpoints/{id}/replay`, await caller.post(`${ep}/replay`, {}));
      conforms(
        'POST',
        `${prefix}/webhook-endpoints/{id}/recover`,
        await caller.post(`${ep}/recover`, { since: 0 }),
      );
      conforms(
        'POST',
        `${prefix}/webhook-endpoints/{id}/discard-pending`,
        await caller.post(`${ep}/discard-pending`),
      );
      conforms('PATCH', `${prefix}/webhook-endpoints/{id}`, await caller.patch(ep, { description: 'CRM' }));
      conforms('GET', `${prefix}/webhook-event-types`, await caller.get(`${prefix}/webhook-event-types`));
      return ep;
    };
    const ep = await webhookOperations(op, '/admin/v1', '/admin/v1/campaigns');

    // The public API, with the key the operator issued.
    const api = client(inProcess(stack.app), key.key);
    conforms('POST', '/v1/portal-sessions', await api.post('/v1/portal-sessions', { expiresInSeconds: 600 }));
    conforms(
      'DELETE',
      '/v1/webhook-endpoints/{id}',
      await api.delete(await webhookOperations(api, '/v1', '/v1/campaign')),
    );
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
    conforms(
      'GET',
      '/v1/campaign/{id}/participants/export',
      await api.get(`/v1/campaign/${campaign.id}/participants/export`),
    );
    conforms(
      'GET',
      '/v1/campaign/{id}/loyalty-actions/export',
      await api.get(`/v1/campaign/${campaign.id}/loyalty-actions/export?status=APPLIED`),
    );
    answers(
      'GET',
      '/v1/campaign/{id}/participants/export',
      await api.get(`/v1/campaign/${campaign.id}/participants/export`, { accept: 'application/x-ndjson' }),
    );
    // An import: a CSV file (one row refused), followed to its end; the same file again; the operator's, as JSON.
    const csv = `email,firstName,loyaltyActionCount.${reward.id}\r\n${uniqueEmail('imp')},Ada,1\r\nnot-an-email,Bo,\r\n`;
    const started = answers(
      'POST',
      '/v1/campaign/{id}/participants/imports',
      await api.post(`/v1/campaign/${campaign.id}/participants/imports`, csv, { 'content-type': 'text/csv' }),
      202,
    );
    const imported = await eventually(
      () => api.get(`/v1/campaign/${campaign.id}/participants/imports/${started.id}`),
      (r) => r.body.status === 'SUCCEEDED',
    );
    conforms('GET', '/v1/campaign/{id}/participants/imports/{importId}', imported);
    expect(imported.body).toMatchObject({ created: 1, refused: 1, loyaltyActionsQueued: 1 });
    conforms(
      'POST',
      '/v1/campaign/{id}/participants/imports',
      await api.post(`/v1/campaign/${campaign.id}/participants/imports`, csv, { 'content-type': 'text/csv' }),
    );
    conforms(
      'GET',
      '/v1/campaign/{id}/participants/imports',
      await api.get(`/v1/campaign/${campaign.id}/participants/imports`),
    );
    conforms(
      'GET',
      '/v1/campaign/{id}/participants/imports/{importId}/refused-rows',
      await api.get(imported.body.refusedRowsUrl),
    );
    const byOperator = answers(
      'POST',
      '/admin/v1/campaigns/{id}/participants/import',
      await op.post(`/admin/v1/campaigns/${campaign.id}/participants/import?silent=true`, [
        { email: uniqueEmail('op'), metadata: { tier: 'gold' } },
      ]),
      202,
    );
    conforms(
      'GET',
      '/admin/v1/campaigns/{id}/participants/imports/{importId}',
      await op.get(`/admin/v1/campaigns/${campaign.id}/participants/imports/${byOperator.id}`),
    );
    const sameRows = [{ email: uniqueEmail('again') }];
    const path = `/admin/v1/campaigns/${campaign.id}/participants/import?silent=true`;
    expect((await op.post(path, sameRows)).status).toBe(202);
    conforms('POST', '/admin/v1/campaigns/{id}/participants/import', await op.post(path, sameRows));
    // The audit log of what the program did so far, the account's and the operator's view of it.
    const log = conforms('GET', '/v1/audit-log', await api.get('/v1/audit-log?limit=3'));
    expect(log).toMatchObject({ limit: 3, more: true, nextId: expect.any(String) });
    conforms(
      'GET',
      '/admin/v1/audit-log',
      await op.get(`/admin/v1/audit-log?accountId=${account.id}&entity=participant&limit=100`),
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
      operations.map(({ method, path }) => `${method} ${path}`).filter((k) => !checked.has(k)),
      'operations this test did not call',
    ).toEqual([]);
  });
});
