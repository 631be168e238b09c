/**
 * The ingest baseline's server: a bare `@hono/node-server` app, the server library the API runs on, that
 * answers every request with one fixed JSON body shaped like an accepted action. Run as a child process
 * (`node --import tsx bench/bare-server.ts`) on PORT, like an API process.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const ANSWER = {
  success: true,
  message: 'Participant loyalty action accepted',
  action: {
    id: 'act_0123456789abcdefghij',
    status: 'QUEUED',
    participantId: 'abcdefghijkl',
    rewardId: 'crew_0123456789abcdefghij',
    createdAt: 1_800_000_000_000,
  },
};

const app = new Hono();
app.all('*', (c) => c.json(ANSWER));

serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: '127.0.0.1' });
process.on('SIGTERM', () => process.exit(0));
