import type { Processor } from '@stampcard/jobs';
import { inSpan } from '@stampcard/telemetry';
import type { ActionBatcher, ActionTraces } from '../batcher';

/**
 * `loyalty-action-batch.apply`: hands each action to the batcher, as if each were its own job, and ends when
 * all are applied (or skipped: not QUEUED any more). A job run again changes nothing the second time. With
 * tracing on, each action that carries its request's `traceparent` is applied in a span of that trace, and its
 * events' fan-out carries it on (`traces`).
 */
export function applyLoyaltyActions(
  batcher: ActionBatcher,
  traces: ActionTraces,
): Processor<'loyalty-action-batch.apply'> {
  return async ({ actionIds, traceparents }) => {
    const results = await Promise.all(
      actionIds.map((id, i) => {
        const traceparent = traceparents?.[i];
        if (!traceparent) return batcher.submit(id);
        return inSpan(
          'apply loyalty action',
          { parent: traces.parentOf(traceparent), attributes: { 'stampcard.loyalty_action.id': id } },
          async (span) => {
            traces.begin(id);
            try {
              const applied = await batcher.submit(id);
              span.setAttribute('stampcard.loyalty_action.status', applied?.status ?? 'SKIPPED');
              return applied;
            } finally {
              traces.end(id);
            }
          },
        );
      }),
    );
    return { actions: actionIds.length, applied: results.filter((r) => r !== null).length };
  };
}
