import { RATE_POLICIES } from '@stampcard/core';
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
  { name: 'Events', description: "A campaign's events, to reconcile what webhooks missed" },
  { name: 'Operator: accounts', description: 'Operator API: accounts, team members and API keys' },
  { name: 'Operator: campaigns', description: 'Operator API: campaigns, their settings and rewards' },
  { name: 'Operator: webhooks', description: 'Operator API: webhook endpoints and their messages' },
  { name: 'Operator: queues', description: 'Operator API: the job queues' },
];

const DESCRIPTION = `The Stampcard REST API: loyalty programs (campaigns), their participants and loyalty actions, and the operator API that sets them up.

**Public API** (\`/v1\`): every request carries \`Authorization: Bearer <API_KEY>\` (scheme \`ApiKey\`). POST bodies are JSON or form-encoded (\`metadata[key]=value\` for nested keys). Ids are strings; times in bodies are integer UTC milliseconds.

**Operator API** (\`/admin/v1\`, the tags named "Operator: …"): \`Authorization: Bearer <OPERATOR_TOKEN>\` (scheme \`OperatorToken\`).

**Rate limits**: per API key, 30 requests per 5 s, 200 per minute and 10,000 per hour (sliding windows), or the account's own; at most 3 requests in flight per account and client IP; writes past 60 a minute are each held back (n-th over it: n × 100 ms). Past a limit: 429 \`RATE_LIMIT\` with \`policyName\` (\`SECOND\`, \`MINUTE\`, \`HOUR\`, \`CONCURRENCY\`). Every answer to a request with a valid key carries the \`Stampcard-RateLimit-*\` headers and the IETF draft's \`RateLimit-Policy\` and \`RateLimit\`.

**Errors**: every answer other than 200 has one body, the \`Error\` schema: \`{ name, code, message, status, supportUrl, level, timestamp, requestId }\` plus the fields of its kind. Each operation lists the codes it can answer; the errors section at the end of this page (\`${DOCS_PATH}#${ERRORS_ANCHOR}\`) describes them all.`;

type Operation = {
  security?: unknown[];
  parameters?: Record<string, unknown>[];
  responses?: Record<string, { headers?: Record<string, unknown>; [field: string]: unknown }>;
};

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
type Document = {
  paths?: Record<string, Record<string, Operation>>;
  components?: { headers?: Record<string, unknown> };
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

/** The document, from the route definitions that validate requests; every operation gets its scheme. */
export function openApiDocument(app: App) {
  const doc = app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: { title: 'Stampcard API', version: 'v1', description: DESCRIPTION },
    tags: TAGS,
  });
  const document = doc as Document;
  document.components = {
    ...document.components,
    headers: { ...document.components?.headers, ...RATE_HEADERS },
  };
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    const scheme = SECURITY_BY_PREFIX.find(([prefix]) => path.startsWith(prefix))?.[1];
    if (!scheme) continue;
    for (const operation of Object.values(item)) operation.security ??= [{ [scheme]: [] }];
    const post = item.post;
    if (post) {
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
    // The public API's answers, refusals included, carry the rate headers (not a 403: no valid key).
    if (!path.startsWith('/v1/')) continue;
    for (const operation of Object.values(item)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (status === '403') continue;
        operation.responses![status] = { ...response, headers: { ...response.headers, ...RATE_HEADER_REFS } };
      }
    }
  }
  return doc;
}
