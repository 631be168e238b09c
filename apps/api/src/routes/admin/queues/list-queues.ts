import { createRoute } from '@hono/zod-openapi';
import { unavailable } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { QueueList } from '../responses';

const route = createRoute({
  method: 'get',
  operationId: 'adminListQueues',
  path: '/admin/v1/queues',
  summary: "Each queue's waiting, active, delayed and failed counts",
  tags: ['Operator: queues'],
  responses: {
    ...okResponse('`{ queues: [{ name, waiting, active, delayed, failed, completed }] }`', QueueList),
    ...operatorErrorResponses,
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
        return {
          name: q.name,
          waiting: counts.waiting ?? 0,
          active: counts.active ?? 0,
          delayed: counts.delayed ?? 0,
          failed: counts.failed ?? 0,
          completed: counts.completed ?? 0,
        };
      }),
    );
    return c.json({ queues }, 200);
  });
