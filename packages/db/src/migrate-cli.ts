import { loadConfig } from '@stampcard/config';
import { runMigrations } from './migrate';

const cfg = loadConfig();
await runMigrations(cfg.DATABASE_URL);
console.log(`Migrations applied to ${new URL(cfg.DATABASE_URL).pathname.slice(1)}`);
