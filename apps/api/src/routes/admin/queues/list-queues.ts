import { createRoute } from '@hono/zod-openapi';
import { queueCounts } from '@stampcard/jobs';
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
  app.openapi(route, async (c) => c.json({ queues: await queueCounts(c.get('deps').queues) }, 200));
