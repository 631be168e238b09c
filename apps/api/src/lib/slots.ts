/**
 * Work of one kind running at once in this process, at most `max`: exports, each holding a database connection
 * for as long as its reader reads, and import uploads, each holding one in a transaction while its file streams
 * in. `take` answers the slot's release, or null when none is free (the route answers 429).
 */
export function createSlots(max: number) {
  let running = 0;
  return {
    max,
    take(): (() => void) | null {
      if (running >= max) return null;
      running += 1;
      let released = false;
      return () => {
        if (!released) running -= 1;
        released = true;
      };
    },
  };
}
export type Slots = ReturnType<typeof createSlots>;
