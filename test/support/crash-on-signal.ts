/**
 * Preloaded (`--import`) into a role's process by test/e2e/start.test.ts: on SIGUSR2 it throws an error
 * nothing handles, from a timer (`crash-on-signal.ts?exception`) or as a rejected promise (`?rejection`),
 * as a driver bug would. The error's message holds a would-be secret, which no log line may carry.
 */
process.on('SIGUSR2', () => {
  const err = new TypeError('sk_live_never_logged: the message of an error a driver threw');
  if (new URL(import.meta.url).search === '?rejection') void Promise.reject(err);
  else
    setImmediate(() => {
      throw err;
    });
});
