import { safeError } from '@stampcard/config';
import { isJobName, JOBS, type JobName, type JobPayload } from '@stampcard/jobs';
import { type Job, UnrecoverableError } from 'bullmq';

/** What runs a job: it receives the payload its name gives, already validated. */
export type Processor<N extends JobName> = (payload: JobPayload<N>, job: Job) => Promise<unknown>;
/** One processor for every job of the catalog: a job added to the catalog without one does not compile. */
export type Processors = { [N in JobName]: Processor<N> };

/**
 * BullMQ keeps a failed job's message and stack in Redis and shows them on the dashboard. A database error's
 * message carries the query's parameters (participants' emails, names, metadata), so the job fails with its
 * class and code only; the full error goes to the log through its safe serializer.
 */
export function jobFailure(err: unknown): Error {
  const info = safeError(err);
  const causes: string[] = [];
  for (let at: Record<string, unknown> | undefined = info; at; at = at.cause as typeof info | undefined) {
    causes.push([at.type, at.code, at.constraint].filter(Boolean).join(' '));
  }
  return new Error(`job failed: ${causes.join(' <- ')}`, { cause: err });
}

/**
 * The BullMQ processor of a queue: finds the job's name in the catalog and its processor in the map,
 * re-validates the payload (an unknown name or an invalid payload will never succeed, so it is not retried),
 * and fails with a log-safe error.
 */
export function dispatchByName(processors: Processors) {
  return async (job: Job) => {
    if (!isJobName(job.name)) throw new UnrecoverableError('Unknown job name: not in the job catalog');
    const name = job.name;
    const parsed = JOBS[name].payload.safeParse(job.data);
    if (!parsed.success) {
      const where = parsed.error.issues.map((i) => `${i.path.join('.') || '(payload)'} ${i.code}`).join(', ');
      throw new UnrecoverableError(`Invalid payload for ${name}: ${where}`);
    }
    const run = processors[name] as Processor<typeof name>;
    try {
      return await run(parsed.data, job);
    } catch (err) {
      throw jobFailure(err);
    }
  };
}
