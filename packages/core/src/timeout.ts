/**
 * `p`, or a rejection with `new Error(message)` once `ms` have passed without it settling (`p` itself goes on;
 * its later outcome is ignored). Every wait on a store that may stop answering goes through a bound like this.
 */
export async function withTimeout<T>(p: Promise<T>, ms: number, message = 'timeout'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
