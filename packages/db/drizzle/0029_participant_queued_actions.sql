-- The QUEUED actions, by participant and oldest first, in place of the index of them by time alone: a batch of the
-- worker applies a participant's earlier actions before its own later ones, so actions are applied in the order
-- they were accepted, and with one index of QUEUED rows the planner has no other to pick for a participant's
-- range. Only QUEUED rows are in it. Built with the ledger's SHARE lock (writes wait, reads do not) for one read
-- of the table: see docs/operating.md, "Upgrading".
DROP INDEX "loyalty_actions_queued_idx";--> statement-breakpoint
CREATE INDEX "loyalty_actions_participant_queued_idx" ON "loyalty_actions" USING btree ("participant_id","created_at") WHERE "loyalty_actions"."status" = 'QUEUED';