import { createRoute, z } from '@hono/zod-openapi';
import { retentionOverview } from '@stampcard/core';
import { DEFAULT_RETENTION, PARTITIONED_TABLES, type PartitionedTable } from '@stampcard/db';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';

const ms = z.number().int().openapi({ description: 'UTC milliseconds' });

const Partition = z.strictObject({
  name: z.string(),
  from: ms.nullable().openapi({
    description: 'Its first time; null: every time before `to` (the rows from before partitioning)',
  }),
  to: ms.openapi({ description: 'The end of its period (excluded), UTC ms' }),
  rows: z.number().int().openapi({ description: "PostgreSQL's estimate (0 until it is analysed)" }),
  bytes: z.number().int().openapi({ description: 'Rows, TOAST and indexes' }),
  dropsAt: ms.openapi({ description: 'When the worker drops it: `to` plus the retention' }),
});

const Table = z.strictObject({
  table: z.enum(Object.keys(PARTITIONED_TABLES) as [PartitionedTable, ...PartitionedTable[]]),
  unit: z
    .enum(['day', 'week', 'month'])
    .openapi({ description: 'A partition holds a day, a week (from Monday 00:00 UTC) or a month (UTC)' }),
  retentionDays: z.number().int().openapi({
    description:
      '`EVENT_RETENTION_DAYS` (events and messages), `ATTEMPT_RETENTION_DAYS`, `AUDIT_RETENTION_DAYS`, or 1 for `idempotency_keys` (a key holds its answer 24 hours)',
  }),
  partitions: z.array(Partition).openapi({ description: 'Oldest first' }),
  nextDrop: z
    .strictObject({ name: z.string(), at: ms })
    .nullable()
    .openapi({ description: 'The partition the worker drops next, and when' }),
  madeUntil: ms
    .nullable()
    .openapi({ description: 'Partitions exist up to this time; the worker keeps two periods ahead' }),
  waitingInDefault: z.number().int().openapi({
    description:
      'Rows in the default partition (counted up to 100,000): their period had no partition yet (the worker was away); it moves them when it makes that partition. 0 normally',
  }),
});

const Retention = z.strictObject({ tables: z.array(Table) }).openapi('Retention');

const route = createRoute({
  method: 'get',
  operationId: 'adminGetRetention',
  path: '/admin/v1/retention',
  summary: 'What each partitioned table keeps, and what the worker drops next',
  description:
    'Events, webhook messages and attempts are partitioned by week, the audit log by month, stored Idempotency-Key answers by day; the worker makes partitions ahead and drops a partition whole once all of it is past retention (docs/operating.md, "Retention").',
  tags: ['Operator: retention'],
  responses: {
    ...okResponse(
      '`{ tables: [{ table, unit, retentionDays, partitions, nextDrop, madeUntil, waitingInDefault }] }`',
      Retention,
    ),
    ...operatorErrorResponses,
  },
});

export const registerGetRetention = (app: App) =>
  app.openapi(route, async (c) => {
    const { retention } = c.get('deps');
    return c.json({ tables: await retentionOverview(c.get('ctx'), retention ?? DEFAULT_RETENTION) }, 200);
  });
