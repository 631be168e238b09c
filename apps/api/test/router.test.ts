import { TrieRouter } from 'hono/router/trie-router';
import { describe, expect, it } from 'vitest';
import { client, inProcess } from '../../../test/support/client';
import { makeWorld } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';
import { SplitRouter } from '../src/lib/router';

const stack = useTestStack({ worker: false });

/** A path each route pattern matches: its parameters and wildcards filled in. */
const pathsOf = (pattern: string) => {
  const filled = pattern
    .replace(/:[A-Za-z0-9_]+(\{[^}]*\})?\??/g, 'p1')
    .replace(/\/\*$/, '/x/y')
    .replace(/\*/g, 'x');
  return [filled, `${filled}/extra`, filled.replace(/\/[^/]*$/, '') || '/'];
};

/**
 * What a match says, in one shape whichever router answered: each handler (the first of the app's pair) with its
 * parameters.
 */
function resolved(result: ReturnType<TrieRouter<unknown>['match']>) {
  const [handlers, stash] = result as [[unknown, Record<string, string | number>][], string[] | undefined];
  return handlers.map(([pair, params]) => {
    const named: Record<string, string | undefined> = {};
    for (const [name, at] of Object.entries(params)) named[name] = stash ? stash[at as number] : String(at);
    return { handler: (pair as [unknown, unknown])[0], params: named };
  });
}

describe('the app router', () => {
  it("matches the API with Hono's regular-expression router, the dashboard and the console apart", async () => {
    const w = await makeWorld(stack.ctx);
    const r = await client(inProcess(stack.app), w.key).get('/v1/campaigns');
    expect(r.status).toBe(200);
    const router = stack.app.router as unknown as SplitRouter<unknown>;
    expect(router).toBeInstanceOf(SplitRouter);
    // Settled by the first request: a route added beyond RegExpRouter outside the split prefixes would show here.
    expect(router.fastRouterName).toBe('SmartRouter + RegExpRouter');
  });

  it('answers every path of every route as one trie of all the routes does', () => {
    const reference = new TrieRouter<unknown>();
    for (const route of stack.app.routes) reference.add(route.method, route.path, [route.handler, route]);
    const router = stack.app.router as unknown as SplitRouter<unknown>;
    const paths = new Set(stack.app.routes.flatMap((route) => pathsOf(route.path)));
    for (const extra of ['/', '/v1', '/admin', '/admin/queuesx', '/consolex', '/console', '/admin/queues']) {
      paths.add(extra);
    }
    let compared = 0;
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
        expect(resolved(router.match(method, path)), `${method} ${path}`).toEqual(
          resolved(reference.match(method, path)),
        );
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });
});
