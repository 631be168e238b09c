import type { Tx } from '@stampcard/db';
import type { Clock } from './clock';

/** What every domain operation runs with. `db` is the pool or, inside a unit of work, its transaction. */
export type Ctx = { db: Tx; clock: Clock };
