/**
 * Exports running at once in this process, at most `max`: each holds a database connection for as long as
 * its reader reads. `take` answers the slot's release, or null when none is free (the route answers 429).
 */
export function createExportSlots(max: number) {
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
export type ExportSlots = ReturnType<typeof createExportSlots>;
