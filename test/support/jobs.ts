import type { Job } from 'bullmq';
import type { TestStack } from './stack';

/**
 * The `loyalty-action-batch.apply` job that carries an action (the accept path queues actions in batch jobs), in
 * whatever state, or undefined when none does.
 */
export async function actionJob(stack: TestStack, actionId: string): Promise<Job | undefined> {
  const jobs = await stack.deps.queues
    .forJob('loyalty-action-batch.apply')
    .getJobs(['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed']);
  return jobs.find((j) => (j?.data as { actionIds?: string[] } | undefined)?.actionIds?.includes(actionId));
}

/** How many `loyalty-action-batch.apply` jobs wait, and how many actions they carry. */
export async function waitingActionJobs(stack: TestStack): Promise<{ jobs: number; actions: number }> {
  const jobs = await stack.deps.queues.forJob('loyalty-action-batch.apply').getWaiting();
  return {
    jobs: jobs.length,
    actions: jobs.reduce((n, j) => n + ((j.data as { actionIds: string[] }).actionIds?.length ?? 0), 0),
  };
}
