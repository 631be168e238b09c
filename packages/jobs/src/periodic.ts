/**
 * A task run every `intervalMs` (measured from the end of one run to the start of the next), never twice at
 * once: `runOnce()` while a run is under way shares it. Relays and sweeps are built on it.
 */
export function periodic<T>(task: () => Promise<T>, intervalMs: number, onError: (err: unknown) => void) {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<T> | null = null;
  const runOnce = (): Promise<T> => {
    running ??= task().finally(() => {
      running = null;
    });
    return running;
  };
  const tick = async () => {
    try {
      await runOnce();
    } catch (err) {
      onError(err);
    }
    if (timer) timer = setTimeout(tick, intervalMs);
  };
  return {
    runOnce,
    start() {
      timer ??= setTimeout(tick, intervalMs);
    },
    async stop() {
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => {});
    },
  };
}
