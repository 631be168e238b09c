/** Most origins an account may let frame its portal. */
export const MAX_FRAME_ANCESTORS = 20;

/**
 * An origin that may frame the portal, as CSP's `frame-ancestors` takes it: `https://host[:port]` (a leading
 * `*.` for every subdomain), or `http://localhost[:port]` / `http://127.0.0.1[:port]` for development. Nothing
 * else: no path, query, credentials, spaces, `;` or `,` (which would end the policy's directive and start
 * another), and lower case only, as browsers compare them.
 */
const ORIGIN =
  /^(?:https:\/\/(?:\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|http:\/\/(?:localhost|127\.0\.0\.1))(?::\d{1,5})?$/;

/** Why `origin` cannot be a frame ancestor, or null when it can. */
export function frameAncestorProblem(origin: string): string | null {
  if (origin.length > 260) return 'is longer than an origin can be';
  if (!ORIGIN.test(origin)) {
    return 'must be an origin such as https://app.example.com (https, lower case, no path; http only for localhost)';
  }
  const port = /:(\d+)$/.exec(origin)?.[1];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return 'has a port out of range';
  return null;
}

/** The portal's `frame-ancestors` directive: the account's origins, or none at all. */
export const frameAncestorsDirective = (origins: readonly string[]) =>
  `frame-ancestors ${origins.length ? origins.join(' ') : "'none'"}`;
