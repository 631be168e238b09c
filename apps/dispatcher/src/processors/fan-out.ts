import { type Ctx, fanOutEvents, unsentMessagesOf } from '@stampcard/core';
import { type Processor, type Queues, scheduleDeliveries } from '@stampcard/jobs';
import { startChildSpan } from '@stampcard/telemetry';

/** How long a fan-out waits before it tries its deferred events again, and how many times (about a second). */
const DEFER_WAIT_MS = 25;
const DEFER_ROUNDS = 40;

/**
 * `webhook-events.fan-out`: the events a worker just committed become one message per interested endpoint,
 * and each new message of an enabled endpoint is queued for delivery. Fanning out twice finds the same
 * messages, so a job run again makes none twice. Run again after its process died (BullMQ took the stalled
 * job back), it also queues the messages of its events that were never attempted: the first run may have
 * committed them and died before queuing them, and they would otherwise wait for the sweep's overdue check.
 * Events held back behind an earlier event of their participant, or behind an ordered endpoint's message of
 * their participant that a claim or an end being written holds (`deferred`), are tried again shortly.
 */
export function fanOut(ctx: Ctx, queues: Queues): Processor<'webhook-events.fan-out'> {
  return async ({ eventIds, traceparents }, job) => {
    // With tracing on, a span for each event that carries its action's trace; its messages carry the span on.
    const spans = new Map<string, ReturnType<typeof startChildSpan>>();
    eventIds.forEach((id, i) => {
      if (traceparents?.[i])
        spans.set(id, startChildSpan('fan out event', traceparents[i], { 'stampcard.event.id': id }));
    });
    let failed = true;
    try {
      let { events, scheduled, deferred } = await fanOutEvents(ctx, eventIds);
      const schedule = (list: typeof scheduled) =>
        scheduleDeliveries(
          queues,
          list.map((m) => ({ ...m, traceparent: spans.get(m.eventId)?.traceparent ?? null })),
        );
      await schedule(scheduled);
      // Events behind an earlier event of their participant that another fan-out holds (or that is still on its
      // way), or whose participant's ordered message is held by a claim or an end being written: tried again
      // shortly, a bounded number of times; what is left then is the sweep's.
      for (let round = 0; deferred.length > 0 && round < DEFER_ROUNDS; round++) {
        await new Promise((r) => setTimeout(r, DEFER_WAIT_MS));
        const again = await fanOutEvents(ctx, deferred);
        await schedule(again.scheduled);
        events += again.events;
        scheduled = [...scheduled, ...again.scheduled];
        deferred = again.deferred;
      }
      failed = false;
      if (job.attemptsStarted > 1) await scheduleDeliveries(queues, await unsentMessagesOf(ctx, eventIds));
      return { events, messages: scheduled.length };
    } finally {
      for (const span of spans.values()) span.end(failed);
    }
  };
}
