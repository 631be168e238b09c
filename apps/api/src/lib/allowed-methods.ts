import { TrieRouter } from 'hono/router/trie-router';

/** The order `Allow` lists methods in. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * The methods each path of `app` answers, for the `Allow` header of a 405 and of an OPTIONS answer: the methods
 * of its routes (middleware, registered for every method, is not a route), HEAD wherever GET is (Hono answers
 * it from the GET route, without the body), and OPTIONS (answered for every known path). Built on the first
 * call, once every route is registered. A path no route matches answers an empty list.
 */
export function allowedMethods(app: {
  routes: readonly { method: string; path: string }[];
}): (path: string) => string[] {
  let router: TrieRouter<string> | undefined;
  const build = () => {
    const built = new TrieRouter<string>();
    for (const route of app.routes) {
      if (route.method === 'ALL') continue;
      built.add('ALL', route.path, route.method.toUpperCase());
    }
    return built;
  };
  return (path) => {
    router ??= build();
    const methods = new Set(router.match('GET', path)[0].map(([method]) => method));
    if (methods.size === 0) return [];
    if (methods.has('GET')) methods.add('HEAD');
    methods.add('OPTIONS');
    return [...methods].sort((a, b) => rank(a) - rank(b));
  };
}

const rank = (method: string) => {
  const at = ORDER.indexOf(method);
  return at === -1 ? ORDER.length : at;
};
