-- The sweep's index of undispatched events gets `seq > 0` in its condition (true of every row), which only the
-- sweep's statement states: the fan-out's look-ups by id and by participant can no longer take it. Building it
-- reads every partition of events once, holding writes to events meanwhile (docs/operating.md, "Upgrading").
DROP INDEX "events_undispatched_idx";--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("seq") WHERE "events"."dispatched_at" is null and "events"."seq" > 0;