CREATE TABLE "leaderboard_buckets" (
	"campaign_id" text NOT NULL,
	"board" text NOT NULL,
	"score" integer NOT NULL,
	"participants" integer NOT NULL,
	CONSTRAINT "leaderboard_buckets_pk" PRIMARY KEY("campaign_id","board","score")
);
--> statement-breakpoint
DROP INDEX "participants_campaign_rank_idx";--> statement-breakpoint
ALTER TABLE "leaderboard_buckets" ADD CONSTRAINT "leaderboard_buckets_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "participants_rank_idx" ON "participants" USING btree ("campaign_id",(-"loyalty_action_count"),"created_at",("id" collate "C"),"loyalty_action_count");--> statement-breakpoint
CREATE INDEX "participants_monthly_rank_idx" ON "participants" USING btree ("campaign_id","counts_month",(-"monthly_loyalty_action_count"),"created_at",("id" collate "C"),"monthly_loyalty_action_count") WHERE "participants"."monthly_loyalty_action_count" > 0;--> statement-breakpoint
CREATE INDEX "participants_prev_monthly_rank_idx" ON "participants" USING btree ("campaign_id","counts_month",(-"prev_monthly_loyalty_action_count"),"created_at",("id" collate "C"),"prev_monthly_loyalty_action_count") WHERE "participants"."prev_monthly_loyalty_action_count" > 0;--> statement-breakpoint
-- The buckets of the participants already there: every count above 0 their rows remember (all-time, their
-- counts month, and the month before it). Kept up to date from here on by the worker and by removals.
INSERT INTO "leaderboard_buckets" ("campaign_id","board","score","participants")
SELECT p."campaign_id", v.board, v.score, count(*)::int
FROM "participants" p
CROSS JOIN LATERAL (VALUES
  ('ALL', p."loyalty_action_count"),
  (p."counts_month", p."monthly_loyalty_action_count"),
  (to_char(to_date(p."counts_month", 'YYYY-MM') - interval '1 month', 'YYYY-MM'), p."prev_monthly_loyalty_action_count")
) AS v(board, score)
WHERE v.score > 0
GROUP BY 1, 2, 3;
