/**
 * The platform's ledger store contract (@model-platform/contract-kit) against the SQLite store:
 * a database in memory, and one in a file, as an app would keep it.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ledgerStoreContract } from "@model-platform/contract-kit/LedgerContract"
import { sqliteLedgerStore } from "../src/SqliteLedgerStore.ts"

ledgerStoreContract("SQLite ledger store, in memory", sqliteLedgerStore(":memory:"))
ledgerStoreContract("SQLite ledger store, in a file", sqliteLedgerStore(join(mkdtempSync(join(tmpdir(), "sqlite-ledger-")), "ledger.db")))
