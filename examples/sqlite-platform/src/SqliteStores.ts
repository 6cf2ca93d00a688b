/**
 * Every store of the example on one SQLite database (one connection, so that the gateway's
 * transactions span the ledger, key, rate-limit and usage tables): a layer of the ports
 * `LedgerStore`, `AccountStore`, `KeyStore`, `RateLimitStore`, `UsageStore` and `GatewayStore`.
 * Merged after `MemoryPlatformStores` it replaces those (the platform's other stores stay in memory).
 */
import { Context, Effect, Layer } from "effect"
import { GatewayStore } from "@model-platform/core/gateway"
import { AccountStore, KeyStore } from "@model-platform/core/keys"
import { RateLimitStore } from "@model-platform/core/kernel"
import { LedgerStore } from "@model-platform/core/ledger"
import { UsageStore } from "@model-platform/core/billing"
import { openDatabase, type SqliteOptions } from "./SqliteDatabase.ts"
import { LEDGER_SCHEMA, ledgerStoreOn } from "./SqliteLedgerStore.ts"
import { accountStoreOn, KEYS_SCHEMA, keyStoreOn } from "./SqliteKeyStore.ts"
import { rateLimitStoreOn, USAGE_SCHEMA, usageStoreOn } from "./SqliteUsageStore.ts"
import { gatewayStoreOn } from "./SqliteGatewayStore.ts"

export type SqliteStores = LedgerStore | AccountStore | KeyStore | RateLimitStore | UsageStore | GatewayStore

/** The stores on the SQLite database at `path` (":memory:" for one that lives as long as the layer). */
export const sqliteStores = (path: string, options: SqliteOptions = {}): Layer.Layer<SqliteStores> =>
  Layer.effectContext(Effect.map(openDatabase(path, [LEDGER_SCHEMA, KEYS_SCHEMA, USAGE_SCHEMA], options), (db) =>
    Context.make(LedgerStore, ledgerStoreOn(db)).pipe(
      Context.add(AccountStore, accountStoreOn(db)),
      Context.add(KeyStore, keyStoreOn(db)),
      Context.add(RateLimitStore, rateLimitStoreOn(db)),
      Context.add(UsageStore, usageStoreOn(db)),
      Context.add(GatewayStore, gatewayStoreOn(db))
    )))
