import type { Logger } from '@stampcard/config';
import { withTimeout } from '@stampcard/core';
import type { ConsumerSlot, Consumers } from './consumers';
import { periodic } from './periodic';
import type { Queues } from './queues';

/** What a worker or dispatcher process sets of its consumer watch (`WorkerOptions`, `DispatcherOptions`). */
export type ConsumerWatchSettings = {
  /**
   * A consumer that holds no job and has started none for this long, while the same job waits at the head of
   * its queue from one look to the next, is wedged and replaced. In ms.
   * @defaultValue 15_000
   */
  consumerStuckMs?: number;
  /**
   * Told when a consumer is replaced a second time without having taken a job in between: the new one is as
   * stuck as the old, so what is wedged is the process's Redis connection, not the consumer's own. `npm
   * start`'s roles exit here, for their supervisor to start a clean process.
   * @defaultValue none: the consumer is replaced again at each look, with a warning
   */
  onConsumerStuck?: (queue: string) => void;
};

export type ConsumerWatchOptions = ConsumerWatchSettings & {
  /** The queues the consumers take from. */
  queues: Queues;
  /** Where each replacement (a warning) and each failed look (an error) is logged. */
  logger: Logger;
  /**
   * Pause between looks, in ms; a look not answered within it is given up.
   * @defaultValue a third of `consumerStuckMs`, at most 5_000
   */
  watchIntervalMs?: number;
  /**
   * How long a replaced consumer's close is waited for, in the background, in ms.
   * @defaultValue 10_000
   */
  closeTimeoutMs?: number;
};

/**
 * Replaces a consumer that has stopped taking jobs while jobs wait for it. BullMQ leaves reconnecting to
 * ioredis, and after some failovers (a Redis Cluster master killed under load, a Sentinel switch) a worker's
 * blocking connection never serves it again: no error, no exit, the queue's jobs wait for ever while the
 * process looks healthy. What its maintainers advise is what this does: close that worker and make another.
 *
 * A look costs nothing while each consumer is busy or has taken a job lately; only an idle one's queue is read
 * (the ids at the head of its waiting and prioritized jobs, one round trip). It is wedged when the same job is
 * still at the head at the next look and the queue is not paused. `runOnce()` answers the queues replaced.
 */
export function watchConsumers(consumers: Consumers, opts: ConsumerWatchOptions) {
  const stuckMs = opts.consumerStuckMs ?? 15_000;
  const intervalMs = opts.watchIntervalMs ?? Math.min(5000, Math.ceil(stuckMs / 3));
  const byName = new Map(opts.queues.all.map((q) => [q.name, q]));
  const heads = new Map<ConsumerSlot, string>();

  async function look(slot: ConsumerSlot, now: number): Promise<boolean> {
    const idleMs = now - slot.lastTakenAt;
    const queue = byName.get(slot.queue);
    if (!queue || slot.holding > 0 || idleMs < stuckMs || slot.worker.closing) {
      heads.delete(slot);
      return false;
    }
    const head = (await queue.getRanges(['wait', 'prioritized'], 0, 0, true)).join(',');
    const before = heads.get(slot);
    heads.set(slot, head);
    if (head === '' || head !== before || (await queue.isPaused())) return false;
    heads.delete(slot);
    slot.replace(opts.closeTimeoutMs ?? 10_000);
    opts.logger.warn(
      { queue: slot.queue, idleMs, replacements: slot.replacements },
      'queue consumer took no job while jobs waited: replaced by a new one',
    );
    if (slot.replacements >= 2) opts.onConsumerStuck?.(slot.queue);
    return true;
  }

  async function lookAll(): Promise<string[]> {
    const now = Date.now();
    const replaced: string[] = [];
    for (const slot of consumers.slots) {
      if (await look(slot, now)) replaced.push(slot.queue);
    }
    return replaced;
  }
  return periodic(
    // A Redis that stops answering must not hold the watch: a look is given up after a pause's length.
    () => withTimeout(lookAll(), intervalMs, `consumer watch: no answer within ${intervalMs} ms`),
    intervalMs,
    // The next look tries again.
    (err) => opts.logger.error({ err }, 'consumer watch failed'),
  );
}
