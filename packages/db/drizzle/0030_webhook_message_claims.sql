-- A dispatcher claims a message in PostgreSQL just before it sends it, so that two dispatchers (or a job run twice
-- after its lock was lost) never send one message at once, and none sends it after its success is recorded. A
-- nullable column without a default: a change of the catalog only, no table rewrite (partitions included).
ALTER TABLE "webhook_messages" ADD COLUMN "claimed_until" timestamp with time zone;
