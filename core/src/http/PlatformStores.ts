/**
 * Every store the platform needs, in one place: each shell provides all of them (memory, Postgres
 * or DynamoDB), and the compiler says which one a shell forgot. Also the one list of their tags, so
 * a shell marks every store's outages (StoreUnavailable.ts) without keeping a list of its own.
 */
import { type Context, Effect, Layer } from "effect"
import { AccountStore } from "../keys/AccountStore.ts"
import { AgentStore } from "../agents/AgentStore.ts"
import { AlertStore } from "../billing/AlertStore.ts"
import { ApprovalStore } from "../accounts/ApprovalStore.ts"
import { BillingSettingsStore } from "../billing/BillingSettingsStore.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import { GatewayStore } from "../gateway/GatewayStore.ts"
import { DepositWatchStore } from "../payments/DepositWatchStore.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { KeyStore } from "../keys/KeyStore.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { OrderStore } from "../payments/OrderStore.ts"
import { PeopleStore } from "../accounts/PeopleStore.ts"
import { PlanStore } from "../plans/PlanStore.ts"
import { RateLimitStore } from "../kernel/RateLimitStore.ts"
import { markUnavailable } from "../kernel/StoreUnavailable.ts"
import { UsageStore } from "../billing/UsageStore.ts"

export type PlatformStores =
  | AccountStore
  | KeyStore
  | IdempotencyStore
  | LedgerStore
  | OrderStore
  | UsageStore
  | RateLimitStore
  | GatewayStore
  | PeopleStore
  | BillingSettingsStore
  | AlertStore
  | PlanStore
  | AgentStore
  | ApprovalStore
  | DocumentStores
  | DepositWatchStore

const marked = <I, S extends object>(tag: Context.Key<I, S>, isUnavailable: (defect: unknown) => boolean) =>
  Layer.effect(tag, Effect.map(tag, (service) => markUnavailable(tag.key, service, isUnavailable)))

/** Each kind's store marked as it is made, under its kind's name. */
const markedDocuments = (isUnavailable: (defect: unknown) => boolean) =>
  Layer.effect(
    DocumentStores,
    Effect.map(DocumentStores, (stores) =>
      DocumentStores.of({
        of: (kind) => markUnavailable(`DocumentStore(${kind.kind})`, stores.of(kind), isUnavailable)
      }))
  )

/**
 * Every store of the platform again, each operation's defects that `isUnavailable` recognises
 * turned into StoreUnavailable (the shell knows which of its failures mean "cannot be reached").
 */
export const markPlatformStores = (
  isUnavailable: (defect: unknown) => boolean
): Layer.Layer<PlatformStores, never, PlatformStores> =>
  Layer.mergeAll(
    marked(AccountStore, isUnavailable),
    marked(KeyStore, isUnavailable),
    marked(IdempotencyStore, isUnavailable),
    marked(LedgerStore, isUnavailable),
    marked(OrderStore, isUnavailable),
    marked(UsageStore, isUnavailable),
    marked(RateLimitStore, isUnavailable),
    marked(GatewayStore, isUnavailable),
    marked(PeopleStore, isUnavailable),
    marked(BillingSettingsStore, isUnavailable),
    marked(AlertStore, isUnavailable),
    marked(PlanStore, isUnavailable),
    marked(AgentStore, isUnavailable),
    marked(ApprovalStore, isUnavailable),
    markedDocuments(isUnavailable),
    marked(DepositWatchStore, isUnavailable)
  )
