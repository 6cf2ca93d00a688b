/**
 * Every store the platform needs (core's `PlatformStores`), in memory: what the in-process shell,
 * the Node server's memory suite and the Lambda shell's own tests run on.
 */
import type { PlatformStores } from "@model-platform/core/http"
import { GatewayStoreComposed } from "@model-platform/core/gateway"
import { Layer } from "effect"
import { AlertStoreMemory } from "./MemoryAlertStore.ts"
import { BillingSettingsStoreMemory } from "./MemoryBillingSettingsStore.ts"
import { DepositWatchStoreMemory } from "./MemoryDepositWatchStore.ts"
import { LedgerStoreMemory } from "./MemoryLedgerStore.ts"
import { OrderStoreMemory } from "./MemoryOrderStore.ts"
import { PeopleStoreMemory } from "./MemoryPeopleStore.ts"
import { PlanStoreMemory } from "./MemoryPlanStore.ts"
import { AgentStoreMemory } from "./MemoryAgentStore.ts"
import { ApprovalStoreMemory, DocumentStoresMemory } from "./MemoryDocuments.ts"
import { RateLimitStoreMemory } from "./MemoryRateLimitStore.ts"
import { MemoryStores } from "./MemoryStores.ts"
import { UsageStoreMemory } from "./MemoryUsageStore.ts"

export const MemoryPlatformStores: Layer.Layer<PlatformStores> = Layer.provideMerge(
  GatewayStoreComposed,
  Layer.mergeAll(
    MemoryStores,
    LedgerStoreMemory,
    OrderStoreMemory,
    UsageStoreMemory,
    RateLimitStoreMemory,
    PeopleStoreMemory,
    BillingSettingsStoreMemory,
    AlertStoreMemory,
    PlanStoreMemory,
    AgentStoreMemory,
    ApprovalStoreMemory,
    DocumentStoresMemory,
    DepositWatchStoreMemory
  )
)
