import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queues } from '@stampcard/jobs';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';

/** Bull Board over the service's queues; mounted behind the operator token by the app. */
export function queueDashboard(queues: Queues) {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.all.map((q) => new BullMQAdapter(q)),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'Stampcard queues' } },
  });
  return adapter.registerPlugin();
}
