import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { commitOutcomeLost } from '../src/context';
import { isUniqueViolation, pgError } from '../src/pg-error';

/** A real socket error: a write to a connection the peer refused (ECONNREFUSED), or EPIPE on a closed one. */
function socketError(): Promise<NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: 1 });
    socket.on('error', (err) => resolve(err as NodeJS.ErrnoException));
  });
}

describe("reading PostgreSQL's answer out of an error", () => {
  it('finds the SQLSTATE and constraint through a wrapper (drizzle wraps the driver error as its cause)', () => {
    const driver = Object.assign(new Error('duplicate key'), {
      code: '23505',
      constraint_name: 'one_queued',
    });
    const wrapped = new Error('Failed query', { cause: driver });
    expect(pgError(wrapped)).toEqual({ code: '23505', constraint: 'one_queued' });
    expect(isUniqueViolation(wrapped, 'one_queued')).toBe(true);
    expect(isUniqueViolation(wrapped, 'another')).toBe(false);
  });

  it("an operating system's five-letter code (EPIPE) is a lost connection, not the server's answer", async () => {
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
    expect(pgError(new Error('Failed query', { cause: epipe }))).toBeUndefined();
    expect(commitOutcomeLost(new Error('Failed query', { cause: epipe }))).toBe(true);
    const real = await socketError();
    expect(typeof real.syscall).toBe('string');
    expect(pgError(real)).toBeUndefined();
    expect(commitOutcomeLost(real)).toBe(true);
  });

  it('a refusal by the server is not a lost outcome; a server shutting down is', () => {
    expect(commitOutcomeLost(Object.assign(new Error('serialization'), { code: '40001' }))).toBe(false);
    expect(commitOutcomeLost(Object.assign(new Error('admin shutdown'), { code: '57P01' }))).toBe(true);
    expect(commitOutcomeLost(Object.assign(new Error('closed'), { code: 'CONNECTION_CLOSED' }))).toBe(true);
  });
});
