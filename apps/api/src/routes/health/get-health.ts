import { createRoute, z } from '@hono/zod-openapi';
import type { App } from '../../env';
import { errorResponsesFor } from '../../lib/error-schema';
import { okResponse } from '../../lib/schemas';

/** `/health`'s and `/livez`'s answer. */
export const Health = z.strictObject({ status: z.literal('ok') }).openapi('Health');

const route = createRoute({
  method: 'get',
  operationId: 'getHealth',
  path: '/health',
  summary: 'Whether the process lives',
  description:
    '200 while the API process runs, whatever its stores: a liveness probe, without a key (`/ready` says whether it can serve). A query holding `%00` is refused (400), as on every path.',
  tags: ['Service'],
  security: [],
  responses: {
    ...okResponse('The process runs', Health),
    ...errorResponsesFor(['VALIDATION_ERROR', 'INTERNAL_ERROR']),
  },
});

export const registerGetHealth = (app: App) =>
  app.openapi(route, (c) => c.json({ status: 'ok' as const }, 200));
