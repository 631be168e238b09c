import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loyaltyActions, participants } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { actionsInJobs } from '../../../test/support/jobs';
import { FROM_SOURCE } from '../../../test/support/processes';
import { useTestStack } from '../../../test/support/use';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const LOCK_MS = 2000;

/**
 * A worker killed with SIGKILL while it holds jobs: BullMQ only frees them once their lock runs out and a
 * stalled-job check runs. With the worker's lock settings (lock `WORKER_LOCK_MS`, a check every half of
 * it) another worker applies them within about 1.5 locks; with BullMQ's defaults (30 s lock, 30 s checks)
 * this test would wait up to a minute and fail.
 */
const stack = useTestStack({ worker: false, lockMs: LOCK_MS });

describe('a worker killed while holding jobs', () => {
  it('another worker applies its jobs once their lock runs out: each exactly once', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(inProcess(stack.app), w.key);
    const email = uniqueEmail('crash');
    for (let i = 0; i < 5; i++) {
      const r = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: email,
        rewardId: w.reward.id,
        metadata: { i },
      });
      expect(r.status).toBe(200);
    }
    // A worker process that takes the jobs and holds them: its batch waits far longer than the test.
    const child = spawn(process.execPath, [...FROM_SOURCE, 'scripts/start.ts', 'worker'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...stack.storeEnv,
        WORKER_BATCH_WAIT_MS: '600000',
        WORKER_LOCK_MS: String(LOCK_MS),
        RELAY_INTERVAL_MS: '600000',
        LOG_LEVEL: 'silent',
      },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      // However the five were batched into jobs (their hand-offs may share one), all are held.
      await eventually(
        () => actionsInJobs(stack, 'active'),
        (n) => n === 5,
        20_000,
      );
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    const held = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.campaignId, w.campaign.id));
    expect(held.map((a) => a.status)).toEqual(Array(5).fill('QUEUED'));

    stack.startWorker();
    const applied = await eventually(
      () => stack.ctx.db.select().from(loyaltyActions).where(eq(loyaltyActions.campaignId, w.campaign.id)),
      (rows) => rows.every((a) => a.status === 'APPLIED'),
      LOCK_MS * 5,
    );
    expect(applied).toHaveLength(5);
    const [p] = await stack.ctx.db.select().from(participants).where(eq(participants.email, email));
    expect(p!.loyaltyActionCount).toBe(5);
  });
});
