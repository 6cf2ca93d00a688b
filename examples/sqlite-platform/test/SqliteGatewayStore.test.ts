/**
 * The platform's gateway store contract (@model-platform/contract-kit: admissions and metering,
 * budgets, grants) against the SQLite stores, in memory and in a file.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gatewayStoreContract } from "@model-platform/contract-kit/GatewayStoreContract"
import { sqliteStores } from "../src/SqliteStores.ts"

gatewayStoreContract("SQLite gateway store, in memory", sqliteStores(":memory:"))
gatewayStoreContract("SQLite gateway store, in a file", sqliteStores(join(mkdtempSync(join(tmpdir(), "sqlite-platform-")), "platform.db")))
