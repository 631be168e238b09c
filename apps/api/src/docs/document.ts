import { RATE_POLICIES } from '@stampcard/core';
import type { ZodType } from 'zod';
import type { App } from '../env';
import { DOCS_PATH, ERRORS_ANCHOR } from '../lib/docs-paths';
import { ERROR_DESCRIPTIONS, exampleErrorBody } from '../lib/error-schema';
import { rateHeaderNames } from '../limits/headers';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../middleware/idempotency';

export const SECURITY_SCHEMES = {
  ApiKey: {
    type: 'http',
    scheme: 'bearer',
    description:
      'The public API (`/v1`): `Authorization: Bearer <API_KEY>`. Keys belong to a user of an account on a paid plan and are issued by the operator API.',
  },
  OperatorToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator API (`/admin/v1`): `Authorization: Bearer <OPERATOR_TOKEN>`.',
  },
} as const;

/** Which scheme guards which paths: the prefixes `createApp` puts the API-key and operator middleware on. */
const SECURITY_BY_PREFIX: [prefix: string, scheme: keyof typeof SECURITY_SCHEMES][] = [
  ['/admin/v1/', 'OperatorToken'],
  ['/v1/', 'ApiKey'],
];

const TAGS = [
  { name: 'Campaigns', description: 'Loyalty programs and their rewards' },
  { name: 'Participants', description: 'The people in a program' },
  { name: 'Loyalty actions', description: 'Counting actions towards rewards' },
  { name: 'Form submissions', description: 'Reward forms participants send, and their review' },
  { name: 'Imports', description: 'Participants brought in bulk from a file, in the background' },
  { name: 'Events', description: "A campaign's events, to reconcile what webhooks missed" },
  { name: 'Audit log', description: 'Who changed what in the account, and when' },
  {
    name: 'Webhook endpoints',
    description:
      "An ADMIN key's own webhooks: endpoints, their messages and attempts, replay, recovery, rotation, a test event, the event catalog, and the portal's links",
  },
  { name: 'Operator: accounts', description: 'Operator API: accounts, team members and API keys' },
  { name: 'Operator: campaigns', description: 'Operator API: campaigns, their settings and rewards' },
  { name: 'Operator: webhooks', description: 'Operator API: webhook endpoints and their messages' },
  { name: 'Operator: queues', description: 'Operator API: the job queues' },
  { name: 'Operator: audit log', description: 'Operator API: every account’s audit log' },
  { name: 'Service', description: 'Liveness and readiness probes, without a key' },
  {
    name: 'Webhooks',
    description:
      "What the service POSTs to a campaign's webhook endpoints: one entry per event type, each with its headers and body",
  },
];

const DESCRIPTION = `The Stampcard REST API: loyalty programs (campaigns), their participants and loyalty actions, and the operator API that sets them up.

**Public API** (\`/v1\`): every request carries \`Authorization: Bearer <API_KEY>\` (scheme \`ApiKey\`). Bodies are JSON or form-encoded: \`metadata[key]=value\` for an object's keys, \`name[]=a&name[]=b\` for an array. Each operation declares the form encoding OpenAPI can describe (scalars and flat objects, as \`deepObject\`); the bodies with arrays or deeper objects (a webhook endpoint's, some operator bodies) are declared as JSON only, since no OpenAPI style writes those. A body whose fields are all optional may be left out (it is then not \`required\`). Ids are strings; times in bodies are integer UTC milliseconds.

**Webhooks**: the \`webhooks\` section is what the service POSTs to a campaign's endpoints, one entry per event type: the body \`{ type, timestamp, data }\` and the Standard Webhooks headers (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`), plus \`stampcard-event-id\`, the event's id in \`GET /v1/campaign/{id}/events\`.

**Probes**: \`GET /health\` and \`GET /ready\`, without a key.

**Operator API** (\`/admin/v1\`, the tags named "Operator: …"): \`Authorization: Bearer <OPERATOR_TOKEN>\` (scheme \`OperatorToken\`).

**Rate limits**: per API key, 30 requests per 5 s, 200 per minute and 10,000 per hour (sliding windows), or the account's own; at most 3 requests in flight per account and client IP; writes past 60 a minute are each held back (n-th over it: n × 100 ms). Past a limit: 429 \`RATE_LIMIT\` with \`policyName\` (\`SECOND\`, \`MINUTE\`, \`HOUR\`, \`CONCURRENCY\`). Every answer to a request with a valid key carries the \`Stampcard-RateLimit-*\` headers and the IETF draft's \`RateLimit-Policy\` and \`RateLimit\`.

**Every answer** carries \`X-Request-Id\` (the request's id in the logs; send your own to set it); a 429 also \`Retry-After\`.

**Errors**: every answer other than 200 has one body, the \`Error\` schema: \`{ name, code, message, status, supportUrl, level, timestamp, requestId }\` plus the fields of its kind. Each operation lists the codes it can answer; the errors section at the end of this page (\`${DOCS_PATH}#${ERRORS_ANCHOR}\`) describes them all.`;

/** Every POST takes an optional `Idempotency-Key` (see the idempotency middleware). */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: 'header',
  required: false,
  description:
    'Makes a repeat safe: a repeat with the same key and the same request (method, path, body) within 24 h answers the first answer again, with `Idempotent-Replayed: true`, and does nothing. While the first is still running: 409 `DUPLICATE_REQUEST`. The same key with another request: 400. A 5xx or 409 answer is not kept (a repeat runs again). A secret shown once (an API key, a webhook secret) is never kept: its replay has that field `null` and names it in `Idempotent-Withheld`. Keys are scoped to the API key (the operator token has its own).',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[!-~]+$' },
};

/** Any POST sent with an `Idempotency-Key` may answer this while the first request with it still runs. */
const DUPLICATE_RESPONSE = {
  description: `Duplicate request: \`DUPLICATE_REQUEST\`.\n\n- \`DUPLICATE_REQUEST\`: ${ERROR_DESCRIPTIONS.DUPLICATE_REQUEST}`,
  content: {
    'application/json': {
      schema: {
        allOf: [
          { $ref: '#/components/schemas/Error' },
          {
            type: 'object',
            properties: {
              code: { type: 'string', enum: ['DUPLICATE_REQUEST'] },
              status: { type: 'number', enum: [409] },
            },
          },
        ],
      },
      examples: {
        DUPLICATE_REQUEST: { summary: 'DuplicateRequest', value: exampleErrorBody('DUPLICATE_REQUEST') },
      },
    },
  },
};

const IDEMPOTENT_REPLAYED = {
  description: '`true` on an answer replayed for a repeated `Idempotency-Key`',
  schema: { type: 'string', enum: ['true'] },
};
const integer = { type: 'integer', minimum: 0 };
/** What every answer to a request with a valid API key carries (README, Rate limits). */
const RATE_HEADERS: Record<string, { description: string; schema: object }> = Object.fromEntries([
  ...RATE_POLICIES.flatMap((p) => [
    [
      rateHeaderNames(p.name).limit,
      { description: `Requests allowed ${p.describe} (\`${p.name}\` policy)`, schema: integer },
    ],
    [
      rateHeaderNames(p.name).remaining,
      { description: `Requests left in the \`${p.name}\` window, a sliding one`, schema: integer },
    ],
    [
      rateHeaderNames(p.name).retryAfter,
      {
        description: `Only when the \`${p.name}\` policy has no request left: ms until its oldest request leaves the window`,
        schema: integer,
      },
    ],
  ]),
  [
    'RateLimit-Policy',
    {
      description:
        'The three policies, as the IETF draft writes them: `"second";q=30;w=5, "minute";q=200;w=60, …`',
      schema: { type: 'string' },
    },
  ],
  [
    'RateLimit',
    {
      description: 'What is left of each policy (IETF draft): `"second";r=29;t=5, …`',
      schema: { type: 'string' },
    },
  ],
  [
    'Stampcard-Slowdown-Milliseconds',
    { description: 'Only on a write held back by the slowdown: how long it waited', schema: integer },
  ],
]);
const RATE_HEADER_REFS = Object.fromEntries(
  Object.keys(RATE_HEADERS).map((name) => [name, { $ref: `#/components/headers/${name}` }]),
);

/**
 * Where the service answers: the origin this document was fetched from (what the docs page's "Try it out"
 * calls). The paths carry their prefixes (`/v1`, `/admin/v1`), so a server is an origin alone.
 */
const SERVERS = [
  {
    url: '/',
    description:
      'The origin this document was served from (`npm start`: http://localhost:3000 unless `PORT` says otherwise)',
  },
];

/** What every answer carries, whatever its status (see the request-log middleware). */
const REQUEST_ID_HEADER = {
  description:
    "The id of this request in the service's logs, and the `requestId` of an error body: the `X-Request-Id` the request sent (1 to 128 letters, digits, `_`, `.` or `-`), or a UUID made for it",
  schema: { type: 'string', minLength: 1, maxLength: 128 },
};

/** An incoming `X-Request-Id` the service keeps as the request's id (anything else is replaced by a UUID). */
const REQUEST_ID_PARAMETER = {
  name: 'X-Request-Id',
  in: 'header',
  required: false,
  description:
    "The request's id in the service's logs, answered in `X-Request-Id` and in an error body's `requestId`. Kept only when it is 1 to 128 letters, digits, `_`, `.` or `-`; otherwise (or when absent) the service makes a UUID.",
  schema: { type: 'string', pattern: '^[\\w.-]{1,128}$' },
};

/** Every 429 carries it (the edge limits): whole seconds, at least 1. */
const RETRY_AFTER_HEADER = {
  description:
    'Seconds to wait before retrying (at least 1), rounded up from the `Stampcard-Retry-After-*-Milliseconds` of the policy hit',
  schema: { type: 'integer', minimum: 1 },
};

type Schema = { $ref?: string; type?: string | string[]; [key: string]: unknown };
type MediaType = { schema?: Schema; encoding?: Record<string, unknown>; [field: string]: unknown };
type Operation = {
  security?: unknown[];
  parameters?: Record<string, unknown>[];
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  responses?: Record<string, { headers?: Record<string, unknown>; [field: string]: unknown }>;
};
type Document = {
  paths?: Record<string, Record<string, Operation>>;
  components?: {
    schemas?: Record<string, Schema>;
    headers?: Record<string, unknown>;
    parameters?: Record<string, unknown>;
  };
};

const FORM = 'application/x-www-form-urlencoded';

/** The kinds of value a schema allows (`type`, and those of its `anyOf`/`oneOf` alternatives), through refs. */
function kindsOf(schema: Schema | undefined, resolve: (s: Schema) => Schema | undefined): Set<string> {
  const s = schema && resolve(schema);
  if (!s) return new Set(['unknown']);
  const kinds = new Set<string>();
  for (const type of [s.type ?? []].flat()) kinds.add(type);
  for (const key of ['anyOf', 'oneOf'] as const)
    for (const alt of (s[key] as Schema[] | undefined) ?? [])
      for (const k of kindsOf(alt, resolve)) kinds.add(k);
  if (kinds.size === 0) kinds.add('unknown');
  return kinds;
}

/**
 * The form-encoded twin of a JSON body, when OpenAPI can say how it is encoded: scalar fields as `name=value`,
 * flat objects as `name[key]=value` (`deepObject`), which is how `parseFormBody` reads them. A body with an
 * array or a deeper object (some operator bodies) is declared as JSON only: no OpenAPI style writes the
 * `name[]=a&name[]=b` that `parseFormBody` reads for an array, nor an object within an object.
 */
function formMediaType(media: MediaType, resolve: (s: Schema) => Schema | undefined): MediaType | null {
  const body = media.schema && resolve(media.schema);
  if (body?.type !== 'object') return null;
  const encoding: Record<string, unknown> = {};
  for (const [name, field] of Object.entries((body.properties as Record<string, Schema>) ?? {})) {
    const kinds = kindsOf(field, resolve);
    if (kinds.has('array') || kinds.has('unknown')) return null;
    if (!kinds.has('object')) continue;
    const object = resolve(field);
    const values = [
      ...Object.values((object?.properties as Record<string, Schema>) ?? {}),
      ...(object?.additionalProperties && typeof object.additionalProperties === 'object'
        ? [object.additionalProperties as Schema]
        : []),
    ];
    for (const value of values) {
      const inner = kindsOf(value, resolve);
      if (inner.has('object') || inner.has('array') || inner.has('unknown')) return null;
    }
    encoding[name] = { style: 'deepObject', explode: true };
  }
  return { schema: media.schema, ...(Object.keys(encoding).length > 0 ? { encoding } : {}) };
}

/** The zod schema each route validates its JSON body with, by `method path` as the document writes them. */
function bodySchemas(app: App): Map<string, ZodType> {
  const found = new Map<string, ZodType>();
  for (const definition of app.openAPIRegistry.definitions) {
    if (definition.type !== 'route') continue;
    const { method, path, request } = definition.route;
    const media = request?.body?.content?.['application/json'] as { schema?: unknown } | undefined;
    const schema = media?.schema as ZodType | undefined;
    if (typeof schema?.safeParse === 'function') found.set(`${method} ${path}`, schema);
  }
  return found;
}

/**
 * The document, from the route definitions that validate requests, completed with what the middleware does
 * around them: each operation's security scheme, `Idempotency-Key` on every POST, the rate headers of the
 * public API, `X-Request-Id` on every answer and `Retry-After` on every 429, the form-encoded twin of JSON
 * bodies, and whether a body may be left out.
 */
export function openApiDocument(app: App) {
  const doc = app.getOpenAPI31Document({
    openapi: '3.1.0',
    // The project's license (LICENSE, package.json), which this document is generated from and shares. Its
    // SPDX `identifier` is OpenAPI 3.1's; the LicenseObject type of openapi3-ts does not name it yet.
    info: {
      title: 'Stampcard API',
      version: 'v1',
      description: DESCRIPTION,
      license: { name: 'MIT', ...({ identifier: 'MIT' } as object) },
    },
    servers: SERVERS,
    tags: TAGS,
  });
  const document = doc as Document;
  document.components = {
    ...document.components,
    headers: {
      ...document.components?.headers,
      ...RATE_HEADERS,
      'X-Request-Id': REQUEST_ID_HEADER,
      'Retry-After': RETRY_AFTER_HEADER,
    },
    parameters: { ...document.components?.parameters, RequestId: REQUEST_ID_PARAMETER },
  };
  const schemas = document.components.schemas ?? {};
  const resolve = (s: Schema): Schema | undefined =>
    typeof s.$ref === 'string' ? schemas[s.$ref.replace('#/components/schemas/', '')] : s;
  const bodies = bodySchemas(app);

  for (const [path, item] of Object.entries(document.paths ?? {})) {
    const scheme = SECURITY_BY_PREFIX.find(([prefix]) => path.startsWith(prefix))?.[1];
    const post = item.post;
    if (scheme && post) {
      post.parameters = [...(post.parameters ?? []), IDEMPOTENCY_KEY_PARAMETER];
      post.responses ??= {};
      post.responses['409'] ??= DUPLICATE_RESPONSE;
      // Any answer but a 5xx or a 409 can be a replay.
      for (const [status, response] of Object.entries(post.responses)) {
        if (status === '409' || status.startsWith('5')) continue;
        post.responses[status] = {
          ...response,
          headers: { ...response.headers, [IDEMPOTENT_REPLAYED_HEADER]: IDEMPOTENT_REPLAYED },
        };
      }
    }
    for (const [method, operation] of Object.entries(item)) {
      if (scheme) operation.security ??= [{ [scheme]: [] }];
      operation.parameters = [...(operation.parameters ?? []), { $ref: '#/components/parameters/RequestId' }];
      // The public API's answers, refusals included, carry the rate headers (not a 403: no valid key).
      const rated = path.startsWith('/v1/');
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        operation.responses![status] = {
          ...response,
          headers: {
            ...response.headers,
            'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
            ...(status === '429' ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {}),
            ...(rated && status !== '403' ? RATE_HEADER_REFS : {}),
          },
        };
      }
      const body = operation.requestBody;
      const json = body?.content?.['application/json'];
      if (body && json) {
        // `guardBody` reads an empty body sent without a content type as `{}`: a route whose schema takes
        // `{}` takes no body at all.
        const schema = bodies.get(`${method} ${path}`);
        if (schema) body.required = !schema.safeParse({}).success;
        const form = formMediaType(json, resolve);
        if (form) body.content = { ...body.content, [FORM]: form };
      }
    }
  }
  return doc;
}
