import { createRoute, z } from '@hono/zod-openapi';
import type { App } from '../../env';
import { errorResponse } from '../../errors';
import { ErrorBody, errorResponsesFor, exampleErrorBody } from '../../lib/error-schema';
import type { Readiness } from '../../lib/readiness';
import { okResponse } from '../../lib/schemas';
import { Checks } from './get-readiness';

const Serving = z
  .strictObject({
    status: z.enum(['ready', 'degraded']).openapi({
      description:
        '`degraded`: Redis does not answer; actions are still accepted (the relay queues them once Redis is back) and rate limits are not enforced meanwhile',
    }),
    checks: Checks,
  })
  .openapi('Serving');

const NotServing = ErrorBody.extend({
  code: z.literal('UNAVAILABLE'),
  status: z.literal(503),
  checks: Checks,
});

const route = createRoute({
  method: 'get',
  operationId: 'getServing',
  path: '/readyz',
  summary: 'Whether the API can serve',
  description:
    "Kubernetes's readiness probe, without a key: 200 while the API can serve, which it can while PostgreSQL answers (`status: degraded` when Redis does not: actions are still accepted), 503 `UNAVAILABLE` when PostgreSQL does not. So a Redis outage does not take every API process out of the load balancer, which would refuse what the degraded mode accepts. `/ready` is stricter: 503 unless both stores answer. At most one check a second runs, whatever the callers.",
  tags: ['Service'],
  security: [],
  responses: {
    ...okResponse('The API can serve', Serving),
    ...errorResponsesFor(['VALIDATION_ERROR', 'INTERNAL_ERROR']),
    503: {
      description: 'PostgreSQL does not answer: `UNAVAILABLE`, with the `checks`',
      content: {
        'application/json': {
          schema: NotServing,
          examples: {
            UNAVAILABLE: {
              summary: 'Unavailable',
              value: {
                ...exampleErrorBody('UNAVAILABLE'),
                message: 'Not ready: PostgreSQL does not answer',
                checks: { postgres: 'down', redis: 'ok' },
              },
            },
          },
        },
      },
    },
  },
});

/** Documented from its definition and answered by a plain handler, as `/ready` (its 503 is the error body). */
export function registerGetServing(app: App, readiness: () => Promise<Readiness>) {
  app.openAPIRegistry.registerPath(route);
  app.get(route.path, async (c) => {
    const checks = await readiness();
    if (checks.postgres === 'ok')
      return c.json(
        { status: checks.redis === 'ok' ? ('ready' as const) : ('degraded' as const), checks },
        200,
      );
    return errorResponse(c, 'UNAVAILABLE', 'Not ready: PostgreSQL does not answer', { checks });
  });
}
