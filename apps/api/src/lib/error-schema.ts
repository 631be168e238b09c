import { z } from '@hono/zod-openapi';
import { ERROR_CATALOG, type ErrorCode, FRAUD_REASON_CODES, MAX_LISTED_ISSUES } from '@stampcard/core';
import { FRAUD_RISK_LEVELS } from '@stampcard/db';
import { HTTP_ERRORS } from './error-status';

/**
 * What each error code means, for the OpenAPI document and the errors section of the docs page (the
 * `supportUrl` of every error body). A code added to the catalogue must be described here: the type says so.
 */
export const ERROR_DESCRIPTIONS = {
  VALIDATION_ERROR: `The request is malformed: bad JSON, a wrong type, an unknown field, a bad email, a value past a limit, a body over 1 MiB. \`errors\` lists the problems as \`{ location, param, value, msg }\` (at most ${MAX_LISTED_ISSUES}; \`errorCount\` then says how many there were).`,
  INVALID_STATE:
    'The request is well formed, but what it names is not in a state that allows it: a campaign that is not `IN_PROGRESS` (DRAFT, COMPLETE), a deleted campaign.',
  AUTHENTICATION_REQUIRED:
    'The queue dashboard without the operator token; sent with `WWW-Authenticate: Basic`, so a browser asks for it.',
  USAGE_LIMIT: "A new participant would pass the account's participant quota.",
  NOT_AUTHORIZED:
    "A missing, mistyped or revoked API key; a FREE plan (the REST API is for paid plans); another account's campaign; a MEMBER without API access to the campaign; on the operator API, a missing or wrong operator token.",
  NOT_FOUND:
    'An unknown or DELETED campaign; an unknown reward, participant, loyalty action, event, account, user, API key, webhook endpoint or message; an unknown path.',
  METHOD_NOT_ALLOWED:
    'A known path with a method it does not take; the `Allow` header and `allowedMethods` list the ones it does (an unknown path is `NOT_FOUND`).',
  DUPLICATE_REQUEST:
    'The same request (API key, path and body) while the first is still QUEUED, or a POST repeating the `Idempotency-Key` of a request still running; `request: { method, path, startedAt }` describes the first.',
  OPERATION_IN_PROGRESS:
    "A webhook endpoint is still releasing or discarding its messages in the background: enabling it during a discard, or discarding during a release or another discard, waits until that operation is DONE. `operation: { kind, state, total, done, startedAt, finishedAt }` is the one running (as the endpoint's `backlog` shows it). Deleting the endpoint is always allowed.",
  PARTICIPANT_BLOCKED:
    'Anti-fraud blocked the participant (a high fraud risk, a blacklisted email or IP address); `fraudRiskLevel`, `fraudReasonCode` and `matchedParticipantIds` say why.',
  RATE_LIMIT:
    'A rate limit was hit; `policyName` names it: `SECOND` (per 5-second window), `MINUTE`, `HOUR`, or `CONCURRENCY` (requests in flight per client IP). Wait before retrying.',
  INTERNAL_ERROR:
    'A fault in the service. It is logged with the `requestId` of the body, which identifies it.',
  UNAVAILABLE:
    'PostgreSQL or Redis is down or too slow (no answer within the request deadline): nothing was accepted, retry later. With `outcome: "UNKNOWN"` (and `actionId` for a loyalty action), a write was sent and its answer lost: look it up before repeating the request. With `outcome: "LANDED"`, the write was recorded but its answer could not be completed in time: look it up, do not repeat the request.',
} as const satisfies Record<ErrorCode, string>;

export const ERROR_CODES = Object.keys(ERROR_CATALOG) as [ErrorCode, ...ErrorCode[]];

const ValidationIssue = z
  .object({
    location: z.string().openapi({ description: '`body`, `query`, `params` or `headers`' }),
    param: z.string().openapi({ description: 'The field, dotted for nested ones; empty for the whole body' }),
    value: z.unknown().openapi({ description: 'An excerpt of the value sent' }),
    msg: z.string(),
  })
  .openapi('ValidationIssue');

/**
 * The one error body, as `buildErrorBody` makes it: the common fields, then the fields of its kind at the top
 * level (each present only for its code).
 */
export const ErrorBody = z
  .object({
    name: z.string(),
    code: z.enum(ERROR_CODES).openapi({
      description: ERROR_CODES.map(
        (code) => `- \`${code}\` (${HTTP_ERRORS[code].status}): ${ERROR_DESCRIPTIONS[code]}`,
      ).join('\n'),
    }),
    message: z.string(),
    status: z.number().int().openapi({ description: 'The HTTP status, repeated' }),
    supportUrl: z.string().openapi({ description: 'Where the codes are described (`/v1/docs#errors`)' }),
    level: z.literal('error'),
    timestamp: z.iso.datetime().openapi({ description: 'ISO 8601, UTC' }),
    requestId: z.string().optional().openapi({ description: 'Also in the `X-Request-Id` header' }),
    errors: z
      .array(ValidationIssue)
      .optional()
      .openapi({ description: `VALIDATION_ERROR: the problems (at most ${MAX_LISTED_ISSUES})` }),
    errorCount: z
      .number()
      .int()
      .optional()
      .openapi({ description: 'VALIDATION_ERROR: how many problems in all, when more than were listed' }),
    request: z
      .object({ method: z.string(), path: z.string(), startedAt: z.number().int() })
      .optional()
      .openapi({ description: 'DUPLICATE_REQUEST: the first request; `startedAt` in UTC ms' }),
    operation: z
      .object({
        kind: z.enum(['RELEASE', 'DISCARD']),
        state: z.literal('RUNNING'),
        total: z.number().int(),
        done: z.number().int(),
        startedAt: z.number().int(),
        finishedAt: z.null(),
      })
      .optional()
      .openapi({ description: 'OPERATION_IN_PROGRESS: the operation running; times in UTC ms' }),
    allowedMethods: z.array(z.string()).optional().openapi({
      description: 'METHOD_NOT_ALLOWED: the methods the path takes, as the `Allow` header lists them',
    }),
    policyName: z
      .enum(['SECOND', 'MINUTE', 'HOUR', 'CONCURRENCY'])
      .optional()
      .openapi({ description: 'RATE_LIMIT: the limit hit' }),
    fraudRiskLevel: z.enum(FRAUD_RISK_LEVELS).optional().openapi({ description: 'PARTICIPANT_BLOCKED' }),
    fraudReasonCode: z.enum(FRAUD_REASON_CODES).optional().openapi({ description: 'PARTICIPANT_BLOCKED' }),
    matchedParticipantIds: z
      .array(z.string())
      .optional()
      .openapi({ description: 'PARTICIPANT_BLOCKED: the participants it matched' }),
    outcome: z.enum(['UNKNOWN', 'LANDED']).optional().openapi({
      description:
        'UNAVAILABLE after a write was sent: `UNKNOWN`, its answer was lost (it may have been recorded); `LANDED`, it was recorded but the answer was not completed in time. Either way, look it up rather than repeating the request.',
    }),
    actionId: z
      .string()
      .optional()
      .openapi({ description: 'UNAVAILABLE with `outcome`: the loyalty action to look up' }),
    messageId: z
      .string()
      .optional()
      .openapi({ description: 'UNAVAILABLE with `outcome`: the webhook test message to look up' }),
    reason: z.literal('PAST_RETENTION').optional().openapi({
      description:
        'NOT_FOUND of an event or webhook message whose id is older than what is kept: it was dropped with its week (`EVENT_RETENTION_DAYS`), it did exist',
    }),
    retainedFrom: z.number().int().optional().openapi({
      description: 'NOT_FOUND with `reason`: the oldest time still kept, UTC ms; start again from there',
    }),
  })
  .openapi('Error', { description: 'The body of every answer other than 200' });

/** A body of each code, as the examples of the responses that carry it. */
const EXAMPLES: Record<ErrorCode, { message: string; details?: Record<string, unknown> }> = {
  VALIDATION_ERROR: {
    message: 'participantEmail: must be an email address',
    details: {
      errors: [
        { location: 'body', param: 'participantEmail', value: 'nope', msg: 'must be an email address' },
      ],
    },
  },
  INVALID_STATE: {
    message: 'The campaign is DRAFT: loyalty actions are accepted only while it is IN_PROGRESS',
  },
  AUTHENTICATION_REQUIRED: { message: 'Operator token required' },
  USAGE_LIMIT: { message: 'Participant quota has been exhausted: upgrade the plan to add more participants' },
  NOT_AUTHORIZED: { message: 'The API key is revoked or mistyped' },
  NOT_FOUND: { message: 'Campaign a1b2c3d4 does not exist' },
  METHOD_NOT_ALLOWED: {
    message: 'PUT is not allowed on /v1/campaign/a1b2c3d4/loyalty-action: it takes POST, OPTIONS',
    details: { allowedMethods: ['POST', 'OPTIONS'] },
  },
  DUPLICATE_REQUEST: {
    message: 'An identical request is still being processed: wait for it to finish before sending it again',
    details: {
      request: { method: 'POST', path: '/v1/campaign/a1b2c3d4/loyalty-action', startedAt: 1795384406930 },
    },
  },
  OPERATION_IN_PROGRESS: {
    message:
      'Webhook endpoint ep_3kQ9 is still running a RELEASE of its messages: wait until its backlog is DONE',
    details: {
      operation: {
        kind: 'RELEASE',
        state: 'RUNNING',
        total: 47000,
        done: 12000,
        startedAt: 1795384406930,
        finishedAt: null,
      },
    },
  },
  PARTICIPANT_BLOCKED: {
    message: "Participant blocked by anti-fraud: its email or IP address is on the campaign's blacklist",
    details: { fraudRiskLevel: 'HIGH', fraudReasonCode: 'BLACKLIST_MATCH', matchedParticipantIds: [] },
  },
  RATE_LIMIT: { message: 'Rate limit exceeded: 200 requests per minute', details: { policyName: 'MINUTE' } },
  INTERNAL_ERROR: { message: 'Internal error: the request id identifies it in the logs' },
  UNAVAILABLE: { message: 'A backing store is unavailable: nothing was accepted, retry later' },
};

export function exampleErrorBody(code: ErrorCode) {
  const { name, status } = HTTP_ERRORS[code];
  return {
    name,
    code,
    message: EXAMPLES[code].message,
    status,
    supportUrl: 'https://api.example.com/v1/docs#errors',
    level: 'error',
    timestamp: '2026-11-22T10:00:00.000Z',
    requestId: '0b6f8c1e-5d3a-4f7e-9c2b-1a2b3c4d5e6f',
    ...EXAMPLES[code].details,
  };
}

const STATUS_TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Authentication required',
  402: 'Usage limit',
  403: 'Not authorized',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  422: 'Participant blocked',
  429: 'Rate limit',
  500: 'Internal error',
  503: 'Unavailable',
};

/**
 * The error responses of a route: one per status its codes map to, each the shared `Error` schema with
 * `code` narrowed to the codes that status carries there, and the codes explained in its description.
 */
export function errorResponsesFor(codes: readonly ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const { status } = HTTP_ERRORS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const entries = [...byStatus.entries()]
    .sort(([a], [b]) => a - b)
    .map(([status, list]) => {
      const [first, ...rest] = list as [ErrorCode, ...ErrorCode[]];
      const description = [
        `${STATUS_TITLES[status] ?? 'Error'}: ${list.map((c) => `\`${c}\``).join(' or ')}.`,
        ...list.map((c) => `- \`${c}\`: ${ERROR_DESCRIPTIONS[c]}`),
      ].join('\n\n');
      const schema = ErrorBody.extend({ code: z.enum([first, ...rest]), status: z.literal(status) });
      const examples = Object.fromEntries(
        list.map((code) => [code, { summary: HTTP_ERRORS[code].name, value: exampleErrorBody(code) }]),
      );
      return [status, { description, content: { 'application/json': { schema, examples } } }] as const;
    });
  return Object.fromEntries(entries);
}

/** Every route: a bad parameter or body, a failure of the service, a store that does not answer. */
export const ANY_ROUTE: readonly ErrorCode[] = [
  'VALIDATION_ERROR',
  'NOT_AUTHORIZED',
  'INTERNAL_ERROR',
  'UNAVAILABLE',
];

/** What any `/v1` route can answer besides 200: its key refused, what it names not found, a rate limit. */
export const PUBLIC_ERRORS: readonly ErrorCode[] = [...ANY_ROUTE, 'NOT_FOUND', 'RATE_LIMIT'];

/** What any operator route can answer besides 200 (it has no rate limits). */
export const OPERATOR_ERRORS: readonly ErrorCode[] = [...ANY_ROUTE, 'NOT_FOUND'];
