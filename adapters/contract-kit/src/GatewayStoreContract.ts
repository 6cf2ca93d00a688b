/**
 * The contract suite of the gateway store port (core/src/gateway/GatewayStore.ts). Every platform
 * store set runs it against its own layer of the ports it uses (`GatewayContractStores`; a layer
 * of every platform store will do): `gatewayStoreContract("memory", MemoryPlatformStores)`. The
 * gateway store is checked through the other ports of the same layer (AccountStore and KeyStore
 * to set up, RateLimitStore, LedgerStore, UsageStore): what `admit`
 * and `commit` do must be what those stores show afterwards, and the answers must be those of the
 * composed steps (`GatewayStoreComposed`) whatever the store does in one statement.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * accounts, keys, machines and refs and never assumes an empty store (the suite can run against a
 * persistent database that other suites write to at the same time). Times are explicit:
 * reservations that must stay pending expire in 2100; the one that must expire does so in 1990,
 * before every other suite's era, so `expire` here never touches another test's reservations.
 * Rate windows are the current minute's (a store may drop the counters of windows long past).
 *
 * Not asserted, because the composed steps (memory, DynamoDB) have no transaction around a call:
 * two concurrent commits of the same call may record credits 0 for a call one of them charged; a
 * settlement that dies mid-batch leaves the earlier calls of the batch applied (PostgreSQL rolls
 * the batch back). The Batcher retries a failed batch call by call, and a replayed commit (the
 * gateway retries metering and replays its journal) whose settlement went through records what the
 * reservation was charged.
 *
 * The tests are split by idea, called in this order: GatewayAdmissionContract.ts (batches,
 * the key and its rpm count), GatewayRateLimitContract.ts, GatewayReservationContract.ts,
 * GatewayCommitContract.ts (metering), GatewayBudgetContract.ts, GatewayGrantContract.ts and
 * GatewayLeaseContract.ts; their fixtures are in GatewayContractFixtures.ts.
 */
import { layer } from "@effect/vitest"
import type { Layer } from "effect"
import type { UsageStore } from "@model-platform/core/billing"
import type { GatewayStore } from "@model-platform/core/gateway"
import type { AccountStore, KeyStore } from "@model-platform/core/keys"
import type { RateLimitStore } from "@model-platform/core/kernel"
import type { LedgerStore } from "@model-platform/core/ledger"
import { gatewayAdmissionTests } from "./GatewayAdmissionContract.ts"
import { gatewayBudgetTests } from "./GatewayBudgetContract.ts"
import { gatewayCommitTests } from "./GatewayCommitContract.ts"
import { gatewayGrantTests } from "./GatewayGrantContract.ts"
import { gatewayLeaseTests } from "./GatewayLeaseContract.ts"
import { gatewayRateLimitTests } from "./GatewayRateLimitContract.ts"
import { gatewayReservationTests } from "./GatewayReservationContract.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

/** The ports the suite runs on: the gateway store and the stores it is checked through. */
export type GatewayContractStores = GatewayStore | AccountStore | KeyStore | RateLimitStore | LedgerStore | UsageStore

/** Declares the gateway store contract on a layer of the stores it uses (built once for the suite). */
export const gatewayStoreContract = <E>(name: string, storesLayer: Layer.Layer<GatewayContractStores, E>): void =>
  layer(storesLayer, layerOptions)(name, (it) => {
    gatewayAdmissionTests(it)
    gatewayRateLimitTests(it)
    gatewayReservationTests(it)
    gatewayCommitTests(it)
    gatewayBudgetTests(it)
    gatewayGrantTests(it)
    gatewayLeaseTests(it)
  })
