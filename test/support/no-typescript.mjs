/**
 * Preloaded (`--import`) into a built role's process by test/e2e/start.test.ts: any module resolving to a
 * TypeScript file or to tsx fails to load, so the role can only start if its build needs neither.
 */
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (/\\.[cm]?ts$/.test(new URL(resolved.url).pathname) || resolved.url.includes('/node_modules/tsx/'))
    throw new Error('the build imported ' + resolved.url);
  return resolved;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
