import { createRoute } from '@hono/zod-openapi';
import type { App } from '../../env';
import { errorResponsesFor } from '../../lib/error-schema';
import { okResponse } from '../../lib/schemas';
import { Health } from './get-health';

const route = createRoute({
  method: 'get',
  operationId: 'getLiveness',
  path: '/livez',
  summary: 'Whether the process is alive',
  description:
    "Kubernetes's liveness probe, without a key: 200 while the process answers, without asking any store (restart the process when it fails; a store being down is `/readyz`'s business). The same as `/health`.",
  tags: ['Service'],
  security: [],
  responses: {
    ...okResponse('The process is alive', Health),
    ...errorResponsesFor(['VALIDATION_ERROR', 'INTERNAL_ERROR']),
  },
});

export const registerGetLiveness = (app: App) =>
  app.openapi(route, (c) => c.json({ status: 'ok' as const }, 200));
