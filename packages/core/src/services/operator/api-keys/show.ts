import type { Ctx } from '../../../context';
import { requireApiKey } from '../lookup';
import { serializeApiKey } from './serialize';

/** One API key, without the key (`serializeApiKey`); 404 when there is none. */
export async function showApiKey(ctx: Ctx, keyId: string) {
  return serializeApiKey(await requireApiKey(ctx, keyId));
}
