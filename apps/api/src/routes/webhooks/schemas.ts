import { z } from '@hono/zod-openapi';
import type { BacklogHandOff } from '@stampcard/core';
import { EVENT_TYPES } from '@stampcard/core';
import { ENDPOINT_KINDS, ENDPOINT_ORDERINGS, MESSAGE_STATUSES } from '@stampcard/db';
import { enqueueBacklogSteps, scheduleDeliveries } from '@stampcard/jobs';
import type { Context } from 'hono';
import type { AppEnv } from '../../env';
import { int, pageLimit } from '../../lib/schemas';

export const endpointIdParam = z.object({ id: z.string().min(1).max(64) });

const endpointFields = {
  url: z.string().min(1).max(2048).openapi({
    description: 'http or https; a non-public address is refused unless allowed by the operator',
  }),
  eventTypes: z.array(z.enum(EVENT_TYPES)).max(EVENT_TYPES.length).optional().openapi({
    description: 'Event types to receive; empty or absent: all (FULFILMENT: PARTICIPANT_REACHED_A_GOAL)',
  }),
  kind: z.enum(ENDPOINT_KINDS).optional(),
  enabled: z.boolean().optional(),
  rateLimit: int(1, 10_000)
    .nullable()
    .optional()
    .openapi({ description: 'Deliveries per second, across every dispatcher; null: no limit' }),
  traceContext: z.boolean().optional().openapi({
    description:
      'Send a W3C `traceparent` header with each delivery, when the service traces (OpenTelemetry), so that your spans join the trace of the action that caused it. Default false',
  }),
  ordering: z.enum(ENDPOINT_ORDERINGS).optional().openapi({
    description:
      "`PARTICIPANT`: a participant's messages are sent one at a time, in the order their events were recorded (`webhook-sequence`), each once the one before succeeded or was dead-lettered; other participants' go on meanwhile. `NONE` (the default): sent as they come. A change applies to the messages made after it",
  }),
  description: z.string().max(1000).optional(),
};
export const EndpointBody = z.strictObject(endpointFields);
export const EndpointPatch = z
  .strictObject({ ...endpointFields, url: endpointFields.url.optional() })
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to change' });

export const RotateBody = z.strictObject({
  overlapMs: int(0, 30 * 24 * 3600 * 1000)
    .optional()
    .openapi({
      description: 'How long the old secret keeps signing beside the new one, in ms (default 24 h)',
    }),
});

const msTime = z.coerce.number().int().min(0).max(8_640_000_000_000_000);

const messageFilter = {
  status: z.enum(MESSAGE_STATUSES).optional(),
  eventType: z.string().min(1).max(64).optional(),
  since: msTime.optional().openapi({ description: 'Made at or after (UTC ms)' }),
  until: msTime.optional().openapi({ description: 'Made before (UTC ms)' }),
  participantId: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: 'Only messages of events about this participant' }),
};
export const MessageQuery = z.strictObject({
  ...messageFilter,
  limit: pageLimit,
  after: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: 'The last message id of the previous page' }),
});
export const ReplayBody = z.strictObject({
  ...messageFilter,
  since: z.number().int().min(0).max(8_640_000_000_000_000).optional(),
  until: z.number().int().min(0).max(8_640_000_000_000_000).optional(),
  status: z
    .enum(['FAILED', 'SUCCEEDED', 'DISCARDED'])
    .optional()
    .openapi({ description: 'Which messages to deliver again (default FAILED)' }),
});

/**
 * Queues messages the operator API just made due. The database is the record: if Redis refuses, the
 * dispatcher's sweep queues them (within 30 s), so the answer stays 200 and says so in the log.
 */
export async function queueDeliveries(
  c: Context<AppEnv>,
  list: { messageId: string; generation: number }[],
): Promise<void> {
  const { queues, logger } = c.get('deps');
  await scheduleDeliveries(queues, list).catch((err) =>
    logger.warn({ err, messages: list.length }, 'webhook messages left to the dispatcher sweep'),
  );
}

/**
 * Hands on what a request's backlog operation left once committed: the messages of its first batch to the
 * delivery queue (at most a batch), and the job of its next batch. If Redis refuses, the dispatcher's sweep
 * resumes the operation from its state in PostgreSQL, so the answer stays 200 and the log says so.
 */
export async function handOffBacklog(c: Context<AppEnv>, endpointId: string, handOff: BacklogHandOff) {
  const { queues, logger } = c.get('deps');
  await queueDeliveries(c, handOff.scheduled);
  if (!handOff.next) return;
  await enqueueBacklogSteps(queues, [handOff.next]).catch((err) =>
    logger.warn({ err, endpointId }, 'webhook backlog operation left to the dispatcher sweep'),
  );
}
