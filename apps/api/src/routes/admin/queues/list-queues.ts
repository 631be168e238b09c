import { createRoute } from '@hono/zod-openapi';
import { unavailable } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/queues',
  summary: "Each queue's waiting, active, delayed and failed counts",
  tags: ['Operator'],
  responses: {
    ...okResponse('`{ queues: [{ name, waiting, active, delayed, failed, completed }] }`'),
    ...errorResponses,
  },
});

export const registerListQueues = (app: App) =>
  app.openapi(route, async (c) => {
    const queues = await Promise.all(
      c.get('deps').queues.all.map(async (q) => {
        const counts = await q
          .getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')
          .catch((err: unknown) => {
            throw unavailable('Redis does not answer: queue counts are unavailable, retry later', err);
          });
        return { name: q.name, ...counts };
      }),
    );
    return c.json({ queues }, 200);
  });
