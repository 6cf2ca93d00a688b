/**
 * Port: each account's billing settings (billing/Settings.ts): alert points and alert email,
 * the automatic top-up and the invoicing request, one record per account.
 *
 * Every store keeps the record's encoded form and answers through its Schema, so the shape is
 * written once. An update names the sections it replaces (`BillingSettingsPatch`); the others
 * keep their value, and two updates of different sections never undo each other, whichever
 * order they land in (one atomic merge per update, never a read followed by a write). A patch
 * the record's Schema refuses (`encodePatch`: an alert point out of 1..100, points out of order,
 * a negative amount) is a defect: nothing changes. The shared contract is
 * adapters/test-harness BillingSettingsContract.
 */
import { Context, type Effect } from "effect"
import type { BillingSettings, BillingSettingsPatch } from "./Settings.ts"
import type { AccountId } from "../kernel/Ids.ts"

export class BillingSettingsStore extends Context.Service<BillingSettingsStore, {
  /** The account's settings; DEFAULT_BILLING_SETTINGS for an account that never saved any. */
  readonly get: (accountId: AccountId) => Effect.Effect<BillingSettings>
  /** Replaces the sections the patch names, atomically; answers the settings as they are after it. */
  readonly update: (accountId: AccountId, patch: BillingSettingsPatch) => Effect.Effect<BillingSettings>
}>()("@model-platform/core/billing/BillingSettingsStore") {}
