/**
 * The contract kit's contracts of the other ports the gateway writes through (accounts, keys, rate
 * limits, usage with its reports) against this app's SQLite stores, on one database in a file.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { rateLimitStoreContract } from "@model-platform/contract-kit/RateLimitContract"
import { accountStoreContract, keyStoreContract } from "@model-platform/contract-kit/StoreContract"
import { usageStoreContract } from "@model-platform/contract-kit/UsageContract"
import { sqliteStores } from "../src/SqliteStores.ts"

const database = () => sqliteStores(join(mkdtempSync(join(tmpdir(), "sqlite-platform-")), "platform.db"))

accountStoreContract("SQLite account store", database())
keyStoreContract("SQLite key store", database())
rateLimitStoreContract("SQLite rate-limit store", database())
usageStoreContract("SQLite usage store", database())
