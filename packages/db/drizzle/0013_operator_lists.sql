DROP INDEX "api_keys_user_idx";--> statement-breakpoint
DROP INDEX "campaigns_account_idx";--> statement-breakpoint
DROP INDEX "rewards_campaign_idx";--> statement-breakpoint
CREATE INDEX "accounts_page_idx" ON "accounts" USING btree (("id" collate "C"));--> statement-breakpoint
CREATE INDEX "api_keys_user_page_idx" ON "api_keys" USING btree ("user_id",("id" collate "C"));--> statement-breakpoint
CREATE INDEX "api_keys_page_idx" ON "api_keys" USING btree (("id" collate "C"));--> statement-breakpoint
CREATE INDEX "api_keys_prefix_idx" ON "api_keys" USING btree (("key_prefix" collate "C"));--> statement-breakpoint
CREATE INDEX "users_account_page_idx" ON "users" USING btree ("account_id",("id" collate "C"));--> statement-breakpoint
CREATE INDEX "campaigns_account_page_idx" ON "campaigns" USING btree ("account_id",("id" collate "C"));--> statement-breakpoint
CREATE INDEX "rewards_campaign_page_idx" ON "rewards" USING btree ("campaign_id",("id" collate "C"));