import type { Result, Router } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';

/** Whether `path` (a request's, or a route's pattern) lies at or under `prefix`. */
const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);

/**
 * Hono's default router (`SmartRouter`) settles on the first router that takes every route: `RegExpRouter`
 * (each method's routes compiled into one regular expression, static paths looked up in a map), or, when one
 * route is beyond it, `TrieRouter` for all of them, which walks its trie and builds arrays for every request.
 * Bull Board's routes (`/:queueName/:jobId` beside `/:queueName/pause`) and two of the console's are beyond
 * it, so every request to `/v1` walked the trie for the sake of pages operators open now and then.
 *
 * This router keeps the paths under `slowPrefixes` apart: a request under one of them is matched by a
 * `TrieRouter` that holds every route (as before), any other by a `SmartRouter` that holds every route but
 * theirs. A route whose pattern lies under a prefix can only match a path under it, so for any other path the
 * second router holds every route that can match, in the order they were added, and answers as the first
 * would. `fastRouterName` says which router that second one settled on (a test keeps it `RegExpRouter`).
 */
export class SplitRouter<T> implements Router<T> {
  readonly name = 'SplitRouter';
  readonly #slowPrefixes: readonly string[];
  readonly #slow = new TrieRouter<T>();
  readonly #fast = new SmartRouter<T>({ routers: [new RegExpRouter<T>(), new TrieRouter<T>()] });

  constructor(slowPrefixes: readonly string[]) {
    this.#slowPrefixes = slowPrefixes;
  }

  #isSlow(path: string): boolean {
    for (const prefix of this.#slowPrefixes) if (under(path, prefix)) return true;
    return false;
  }

  add(method: string, path: string, handler: T): void {
    this.#slow.add(method, path, handler);
    if (!this.#isSlow(path)) this.#fast.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    return this.#isSlow(path) ? this.#slow.match(method, path) : this.#fast.match(method, path);
  }

  /** The router the paths outside the prefixes are matched by, once a first request has settled it. */
  get fastRouterName(): string {
    return this.#fast.name;
  }
}
