/** How deep a chain of causes is followed: drizzle wraps the driver's error once; a few more for our own. */
const MAX_DEPTH = 6;

/** A SQLSTATE: five digits or capitals (`23505`, `40P01`), unlike a driver's own codes (`CONNECTION_CLOSED`). */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * Whether `e` carries PostgreSQL's SQLSTATE. An operating system's error code may look like one (`EPIPE`,
 * `EPERM`, `EBADF` are five capitals too), but such an error says the socket failed, not that the server
 * answered: Node marks it with `syscall` or a numeric `errno`.
 */
function hasSqlState(e: Record<string, unknown>): e is Record<string, unknown> & { code: string } {
  if (typeof e.code !== 'string' || !SQLSTATE.test(e.code)) return false;
  return typeof e.syscall !== 'string' && typeof e.errno !== 'number';
}

/** The error, then its causes in turn (`Error.cause`), as objects; a cycle or a non-object ends it. */
export function* errorChain(err: unknown): Generator<Record<string, unknown>> {
  let e: unknown = err;
  for (let depth = 0; depth < MAX_DEPTH && e !== null && typeof e === 'object'; depth++) {
    yield e as Record<string, unknown>;
    const cause = (e as { cause?: unknown }).cause;
    if (cause === e) return;
    e = cause;
  }
}

/**
 * PostgreSQL's answer in an error, possibly wrapped (drizzle's query error carries the driver's as its
 * `cause`): its SQLSTATE and, for a constraint violation, the constraint's name. Undefined when the database
 * did not answer (a lost connection, a driver error): no error along the chain has a SQLSTATE.
 */
export function pgError(err: unknown): { code: string; constraint?: string } | undefined {
  for (const e of errorChain(err)) {
    if (!hasSqlState(e)) continue;
    return {
      code: e.code,
      ...(typeof e.constraint_name === 'string' ? { constraint: e.constraint_name } : {}),
    };
  }
  return undefined;
}

/** Whether PostgreSQL refused the statement for breaking the unique constraint (or index) `constraint`. */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const pg = pgError(err);
  return pg?.code === '23505' && pg.constraint === constraint;
}
