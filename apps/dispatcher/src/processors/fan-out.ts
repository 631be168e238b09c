import { type Ctx, fanOutEvents } from '@stampcard/core';
import { type Processor, type Queues, scheduleDeliveries } from '@stampcard/jobs';

/**
 * `webhook-events.fan-out`: the events a worker just committed become one message per interested endpoint,
 * and each new message of an enabled endpoint is queued for delivery. Fanning out twice finds the same
 * messages, so a job run again makes none twice.
 */
export function fanOut(ctx: Ctx, queues: Queues): Processor<'webhook-events.fan-out'> {
  return async ({ eventIds }) => {
    const { events, scheduled } = await fanOutEvents(ctx, eventIds);
    await scheduleDeliveries(queues, scheduled);
    return { events, messages: scheduled.length };
  };
}
