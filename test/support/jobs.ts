import type { Job, Queue } from 'bullmq';
import { eventually } from './client';
import type { TestStack } from './stack';

/**
 * The `loyalty-action-batch.apply` job that carries an action (the accept path queues actions in batch jobs), in
 * whatever state, or undefined when none does.
 */
export async function actionJob(stack: TestStack, actionId: string): Promise<Job | undefined> {
  const jobs = await batchJobs(stack, (q) =>
    q.getJobs(['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed']),
  );
  return jobs.find((j) => (j?.data as { actionIds?: string[] } | undefined)?.actionIds?.includes(actionId));
}

/**
 * The job that carries an action, once there is one: an answer waits for its action's COMMIT, not for its
 * job, which is queued right after (the API's after-commit hand-off).
 */
export async function handedOff(stack: TestStack, actionId: string): Promise<Job> {
  const job = await eventually(
    () => actionJob(stack, actionId),
    (found) => found !== undefined,
  );
  return job!;
}

/** The actions that the `loyalty-action-batch.apply` jobs in `state` carry, counted over every shard. */
export async function actionsInJobs(stack: TestStack, state: 'active' | 'waiting'): Promise<number> {
  return actionsIn(await batchJobs(stack, (q) => q.getJobs([state])));
}

/** How many actions `loyalty-action-batch.apply` jobs carry together. */
function actionsIn(jobs: Job[]): number {
  return jobs.reduce((n, j) => n + ((j.data as { actionIds?: string[] }).actionIds?.length ?? 0), 0);
}

/** How many `loyalty-action-batch.apply` jobs wait, and how many actions they carry. */
export async function waitingActionJobs(stack: TestStack): Promise<{ jobs: number; actions: number }> {
  const jobs = await batchJobs(stack, (q) => q.getWaiting());
  return { jobs: jobs.length, actions: actionsIn(jobs) };
}

/** What `read` finds in every shard of the `loyalty-action-batch.apply` queue (`QUEUE_SHARDS`), together. */
async function batchJobs(stack: TestStack, read: (q: Queue) => Promise<Job[]>): Promise<Job[]> {
  const shards = stack.deps.queues.shardsOf('loyalty-action-batch.apply');
  return (await Promise.all(shards.map(read))).flat();
}
