-- rewards, webhook_endpoints and erasures keyed by account too (docs/scaling.md, "Past one primary"): each row
-- carries its campaign's account_id, and its foreign key to the campaign is on (account_id, campaign_id), so a
-- row's account is its campaign's and no key crosses accounts. Small tables: the backfill is one short UPDATE.
CREATE UNIQUE INDEX "campaigns_account_id_uq" ON "campaigns" USING btree ("account_id","id");--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "account_id" text;--> statement-breakpoint
ALTER TABLE "erasures" ADD COLUMN "account_id" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "account_id" text;--> statement-breakpoint
UPDATE "rewards" r SET "account_id" = c."account_id" FROM "campaigns" c WHERE c."id" = r."campaign_id";--> statement-breakpoint
UPDATE "erasures" e SET "account_id" = c."account_id" FROM "campaigns" c WHERE c."id" = e."campaign_id";--> statement-breakpoint
UPDATE "webhook_endpoints" w SET "account_id" = c."account_id" FROM "campaigns" c WHERE c."id" = w."campaign_id";--> statement-breakpoint
ALTER TABLE "rewards" ALTER COLUMN "account_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "erasures" ALTER COLUMN "account_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ALTER COLUMN "account_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "rewards" ADD CONSTRAINT "rewards_campaign_fk" FOREIGN KEY ("account_id","campaign_id") REFERENCES "public"."campaigns"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "erasures" ADD CONSTRAINT "erasures_campaign_fk" FOREIGN KEY ("account_id","campaign_id") REFERENCES "public"."campaigns"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_campaign_fk" FOREIGN KEY ("account_id","campaign_id") REFERENCES "public"."campaigns"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rewards" DROP CONSTRAINT "rewards_campaign_id_campaigns_id_fk";--> statement-breakpoint
ALTER TABLE "erasures" DROP CONSTRAINT "erasures_campaign_id_campaigns_id_fk";--> statement-breakpoint
ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "webhook_endpoints_campaign_id_campaigns_id_fk";
