import type { JobsOptions } from 'bullmq';
import { z } from 'zod';

type JobDefinition = { queue: string; payload: z.ZodType; options: JobsOptions };

/**
 * The job catalog, shared by producers (API, relay) and consumers (worker): each job's name, keyed as BullMQ
 * names it (`entity.verb`), gives its queue, its payload schema and its retry policy. `JobPayload<N>` is the
 * payload type of job `N`, so a producer cannot enqueue, nor a processor receive, the wrong shape.
 */
export const JOBS = {
  'loyalty-action.apply': {
    queue: 'loyalty-actions',
    payload: z.strictObject({ actionId: z.string().startsWith('act_') }),
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: { age: 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
} as const satisfies Record<string, JobDefinition>;

export type JobName = keyof typeof JOBS;
export type JobPayload<N extends JobName> = z.infer<(typeof JOBS)[N]['payload']>;
export type QueueName = (typeof JOBS)[JobName]['queue'];

/** Every queue a job of the catalog runs on, once. */
export const QUEUE_NAMES = [...new Set(Object.values(JOBS).map((j) => j.queue))] as QueueName[];

/** Whether `name` (a string from Redis) is a job of the catalog; the catalog is never indexed otherwise. */
export function isJobName(name: string): name is JobName {
  return Object.hasOwn(JOBS, name);
}
