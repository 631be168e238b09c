import { createRoute, z } from '@hono/zod-openapi';
import type { App } from '../../env';
import { errorResponse } from '../../errors';
import { ErrorBody, errorResponsesFor, exampleErrorBody } from '../../lib/error-schema';
import type { Readiness } from '../../lib/readiness';
import { okResponse } from '../../lib/schemas';

const state = z.enum(['ok', 'down']);
/** Whether each store answered: `/ready`'s and `/readyz`'s, from the one shared check. */
export const Checks = z
  .strictObject({ postgres: state, redis: state })
  .openapi('ReadinessChecks', { description: 'Whether each store answered within a second' });

const Ready = z.strictObject({ status: z.literal('ready'), checks: Checks }).openapi('Ready');

const NotReady = ErrorBody.extend({
  code: z.literal('UNAVAILABLE'),
  status: z.literal(503),
  checks: Checks,
  degraded: z
    .strictObject({
      accepting: z.literal(true),
      limits: z.literal('fail-open'),
      redisFailingSince: z
        .number()
        .int()
        .nullable()
        .openapi({ description: 'Since when (UTC ms), when known' }),
    })
    .optional()
    .openapi({
      description:
        'Only when PostgreSQL answers and Redis does not: actions are still accepted (the relay queues them once Redis is back), rate limits are not enforced meanwhile',
    }),
});

const route = createRoute({
  method: 'get',
  operationId: 'getReadiness',
  path: '/ready',
  summary: 'Whether the API can serve',
  description:
    'A readiness probe, without a key: 200 while PostgreSQL and Redis both answer, else 503 `UNAVAILABLE` with the `checks`. At most one check a second runs, whatever the callers; the others share its result.',
  tags: ['Service'],
  security: [],
  responses: {
    ...okResponse('Both stores answer', Ready),
    ...errorResponsesFor(['VALIDATION_ERROR', 'INTERNAL_ERROR']),
    503: {
      description:
        'Not ready: `UNAVAILABLE`, with `checks`. Degraded (PostgreSQL answers, Redis does not): also `degraded`.',
      content: {
        'application/json': {
          schema: NotReady,
          examples: {
            UNAVAILABLE: {
              summary: 'Unavailable',
              value: {
                ...exampleErrorBody('UNAVAILABLE'),
                message: 'Not ready: a backing store does not answer',
                checks: { postgres: 'down', redis: 'ok' },
              },
            },
          },
        },
      },
    },
  },
});

/**
 * The route is documented from its definition, and answered by a plain handler: its 503 is the one error body
 * (`errorResponse`), which the typed handler of `app.openapi` cannot return.
 */
export function registerGetReadiness(app: App, readiness: () => Promise<Readiness>) {
  app.openAPIRegistry.registerPath(route);
  app.get(route.path, async (c) => {
    const checks = await readiness();
    if (checks.postgres === 'ok' && checks.redis === 'ok')
      return c.json({ status: 'ready' as const, checks }, 200);
    if (checks.postgres === 'ok') {
      // PostgreSQL is the record: actions are still accepted (the relay queues them once Redis is back), but
      // rate limits, slowdown and concurrency limits are not enforced meanwhile.
      return errorResponse(c, 'UNAVAILABLE', 'Degraded: Redis does not answer', {
        checks,
        degraded: {
          accepting: true,
          limits: 'fail-open',
          redisFailingSince: c.get('deps').limits?.failingSince()?.getTime() ?? null,
        },
      });
    }
    return errorResponse(c, 'UNAVAILABLE', 'Not ready: a backing store does not answer', { checks });
  });
}
