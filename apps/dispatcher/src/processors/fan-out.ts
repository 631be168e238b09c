import { type Ctx, fanOutEvents, unsentMessagesOf } from '@stampcard/core';
import { type Processor, type Queues, scheduleDeliveries } from '@stampcard/jobs';

/**
 * `webhook-events.fan-out`: the events a worker just committed become one message per interested endpoint,
 * and each new message of an enabled endpoint is queued for delivery. Fanning out twice finds the same
 * messages, so a job run again makes none twice. Run again after its process died (BullMQ took the stalled
 * job back), it also queues the messages of its events that were never attempted: the first run may have
 * committed them and died before queuing them, and they would otherwise wait for the sweep's overdue check.
 */
export function fanOut(ctx: Ctx, queues: Queues): Processor<'webhook-events.fan-out'> {
  return async ({ eventIds }, job) => {
    const { events, scheduled } = await fanOutEvents(ctx, eventIds);
    await scheduleDeliveries(queues, scheduled);
    if (job.attemptsStarted > 1) await scheduleDeliveries(queues, await unsentMessagesOf(ctx, eventIds));
    return { events, messages: scheduled.length };
  };
}
