import { safeError } from '@stampcard/config';
import type { Created } from '@stampcard/core';
import {
  enqueue,
  enqueueActions,
  enqueueErasureSteps,
  enqueueImportSteps,
  type Queues,
  type Traces,
  tracesOf,
} from './queues';

/** Most events in one `webhook-events.fan-out` job (the catalog's bound). */
export const FAN_OUT_BATCH = 5000;

/**
 * The jobs of what committed writes created, the implementation of core's after-commit hand-off
 * (`Ctx.afterCommit`) in every process: the actions go to the worker (`loyalty-action-batch.apply`, see
 * `enqueueActions`), the events to the dispatcher (`webhook-events.fan-out`) and the erasure steps to the
 * worker (`participant-erasure.run`, one job per step by `erasureJobId`), the import steps to the worker
 * (`participant-import.run`, by `importJobId`), each kind in one round trip, all at
 * once. It never throws: the rows are committed, so a failed enqueue loses nothing (the worker's relay queues
 * the actions and resumes the erasures, the dispatcher's sweep fans out the events), and it is logged with
 * the ids and the error's class only. With tracing on, `traces` gives the actions' and events' `traceparent`s,
 * carried beside their ids in the jobs' data.
 */
export function enqueueCommitted(queues: Queues, logger: { warn(obj: object, msg: string): void }) {
  return async (created: Created, traces?: Traces): Promise<void> => {
    const { eventIds, actionIds, erasureSteps, importSteps } = created;
    const fanOuts = Array.from({ length: Math.ceil(eventIds.length / FAN_OUT_BATCH) }, (_, i) => {
      const ids = eventIds.slice(i * FAN_OUT_BATCH, (i + 1) * FAN_OUT_BATCH);
      return { payload: { eventIds: ids, ...tracesOf(ids, traces) } };
    });
    await Promise.all([
      enqueueActions(queues, [...actionIds], traces).catch((err) =>
        logger.warn(
          { actionIds, errorClass: safeError(err).type },
          'actions not queued; the relay will queue them',
        ),
      ),
      enqueue(queues, 'webhook-events.fan-out', fanOuts).catch((err) =>
        logger.warn(
          { eventIds, errorClass: safeError(err).type },
          'events not queued; the dispatcher sweep will fan them out',
        ),
      ),
      enqueueErasureSteps(queues, [...erasureSteps]).catch((err) =>
        logger.warn(
          { participantIds: erasureSteps.map((s) => s.participantId), errorClass: safeError(err).type },
          'erasure steps not queued; the relay will resume them',
        ),
      ),
      enqueueImportSteps(queues, [...importSteps]).catch((err) =>
        logger.warn(
          { importIds: importSteps.map((s) => s.importId), errorClass: safeError(err).type },
          'import steps not queued; the relay will resume them',
        ),
      ),
    ]);
  };
}
