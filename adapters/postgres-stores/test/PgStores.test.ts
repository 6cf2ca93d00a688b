/**
 * The store contracts on Postgres: embedded PGlite in memory and in a data directory, and a real
 * PostgreSQL server when TEST_DATABASE_URL is set. Also the embedded database's own promises:
 * data survives a restart, and one data directory is owned by one process.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Exit, Layer, Redacted } from "effect"
import { Migrator } from "effect/sql"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { AccountRecord } from "@model-platform/core/keys"
import { AccountStore } from "@model-platform/core/keys"
import { ERASED_RESPONSE_BODY, IdempotencyStore, RETENTION_MS } from "@model-platform/core/http"
import { toTimestamp } from "@model-platform/core/kernel"
import { SqlClient } from "effect/sql"
import { allStoreContracts } from "@model-platform/contract-kit/StoreContract"
import * as Database from "../src/database/Database.ts"
import { DataDirLocked, LOCK_FILE, lock } from "../src/database/DataDirLock.ts"
import { migrate, migrations } from "../src/migrations.ts"
import { IdempotencyStorePg, PgStores } from "../src/PgStores.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const stores = (options: Database.Options) => PgStores.pipe(Layer.provide(Database.layer(options)))

/** A fresh directory, removed when the scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "pgstores-test-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

allStoreContracts("PgStores on in-memory PGlite", stores({ dataDir: Database.MEMORY }))

// The directory is made before the database opens and removed after it closes.
allStoreContracts(
  "PgStores on a PGlite data directory",
  Layer.unwrap(Effect.map(tempDir, (dataDir) => stores({ dataDir })))
)

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("PgStores on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) allStoreContracts("contract", stores({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})

  it.live("migration 0021 erases the answers kept in clear before it; a replay of one no longer matches", () =>
    Effect.gen(function*() {
      const url = yield* Effect.promise(() => freshDatabaseUrl(databaseUrl!))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrator.make({})({ loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([id]) => id < "0021"))) })
        const secret = "mpk_aSecretKeptInClearByTheReleaseBeforeSealing12"
        const created_at = new Date().toISOString()
        yield* sql`INSERT INTO idempotency_records (scope, key, fingerprint, created_at, response_status, response_body)
                   VALUES ('acct_old', 'made-a-key', 'old-form', ${created_at}, 200, ${JSON.stringify({ secret })})`
        yield* sql`INSERT INTO idempotency_records (scope, key, fingerprint, created_at) VALUES ('acct_old', 'running', 'old-form', ${created_at})`
        yield* migrate
        const rows = yield* sql<{ key: string; response_body: string | null }>`
          SELECT key, response_body FROM idempotency_records WHERE scope = 'acct_old' ORDER BY key`
        assert.deepStrictEqual(rows.map((r) => [r.key, r.response_body]), [["made-a-key", ERASED_RESPONSE_BODY], ["running", null]])
        // Kept until it expires, under a fingerprint no request has now: the middleware answers 409.
        const claim = yield* Effect.flatMap(IdempotencyStore, (store) =>
          store.claim({ scope: "acct_old", key: "made-a-key", fingerprint: "new-form", created_at })).pipe(
            Effect.provide(IdempotencyStorePg.pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql))))
          )
        assert.strictEqual(claim._tag === "Exists" ? claim.record.fingerprint : claim._tag, "old-form")
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped)
    }), 60_000)
})

describe("IdempotencyStorePg", () => {
  it.live("a claim deletes every row expired by its time, whatever its key", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* IdempotencyStore
      const t0 = Date.UTC(2026, 2, 1)
      const [a, b, c] = ["a", "b", "c"].map((x) => `acct_${x}_${crypto.randomUUID()}`) as [string, string, string]
      yield* store.claim({ scope: a, key: "old", fingerprint: "fp", created_at: toTimestamp(t0) })
      yield* store.complete(a, "old", { status: 200, body: "v1.sealed" })
      yield* store.claim({ scope: b, key: "young", fingerprint: "fp", created_at: toTimestamp(t0 + 1) })
      yield* store.claim({ scope: c, key: "new", fingerprint: "fp", created_at: toTimestamp(t0 + RETENTION_MS) })
      const rows = yield* sql<{ key: string }>`SELECT key FROM idempotency_records WHERE scope IN (${a}, ${b}, ${c}) ORDER BY key`
      assert.deepStrictEqual(rows.map((r) => r.key), ["new", "young"])
    }).pipe(Effect.provide(PgStores.pipe(Layer.provideMerge(Database.layer({ dataDir: Database.MEMORY }))))), 60_000)
})

const account = (id: string): AccountRecord => ({ id, email: `${id}@restart.test`, created_at: "2026-03-04T05:06:07.089Z" })

describe("embedded database", () => {
  it.live("data survives closing and reopening the data directory", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const saved = account(`acct_${crypto.randomUUID()}`)
      yield* Effect.gen(function*() {
        yield* (yield* AccountStore).insert(saved)
      }).pipe(
        Effect.provide(stores({ dataDir }))
      )
      assert.isFalse(Fs.existsSync(Path.join(dataDir, LOCK_FILE)), "the lock is released on close")
      const reopened = yield* Effect.gen(function*() {
        return yield* (yield* AccountStore).get(saved.id)
      }).pipe(
        Effect.provide(stores({ dataDir }))
      )
      assert.deepStrictEqual(reopened, saved)
    }), 60_000)

  it.live("a second open of one data directory is refused, naming the directory and the holder", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      yield* Layer.build(Database.layer({ dataDir }))
      const second = yield* Effect.exit(Layer.build(Database.layer({ dataDir })))
      assert.isTrue(Exit.isFailure(second))
      const error = Exit.isFailure(second) ? Cause.squash(second.cause) : undefined
      assert.instanceOf(error, DataDirLocked)
      if (error instanceof DataDirLocked) {
        assert.strictEqual(error.pid, process.pid)
        assert.include(error.message, dataDir)
        assert.include(error.message, String(process.pid))
      }
    }), 60_000)
})

describe("DataDirLock", () => {
  const writeLock = (dir: string, pid: number) =>
    Fs.writeFileSync(Path.join(dir, LOCK_FILE), JSON.stringify({ pid, token: "someone-else" }))

  const deadPid = () => {
    // A child that has exited: its pid is not running (barring immediate reuse).
    const child = ChildProcess.spawnSync(process.execPath, ["-e", ""])
    return child.pid ?? 0
  }

  it.live("a lock held by a live process is refused", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      writeLock(dir, process.ppid)
      const exit = yield* Effect.exit(Effect.scoped(lock(dir)))
      assert.deepStrictEqual(
        Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined,
        new DataDirLocked({ dataDir: dir, pid: process.ppid, lockFile: Path.join(dir, LOCK_FILE) })
      )
    }))

  it.live("a stale lock (dead pid, or our pid from an earlier life, or garbage) is taken over", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = Path.join(dir, LOCK_FILE)
      for (const stale of [() => writeLock(dir, deadPid()), () => writeLock(dir, process.pid), () => Fs.writeFileSync(file, "{")]) {
        stale()
        yield* Effect.scoped(Effect.gen(function*() {
          yield* lock(dir)
          assert.strictEqual(JSON.parse(Fs.readFileSync(file, "utf8")).pid, process.pid)
        }))
        assert.isFalse(Fs.existsSync(file), "released on close")
      }
    }))

  it.live("another process's lock is refused while it runs, and taken over once it is killed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const lockModule = new URL("../src/database/DataDirLock.ts", import.meta.url).href
      const script = `
        const { Effect } = await import("effect")
        const { lock } = await import(${JSON.stringify(lockModule)})
        Effect.runFork(Effect.scoped(lock(${JSON.stringify(dir)}).pipe(
          Effect.andThen(Effect.sync(() => console.log("locked"))),
          Effect.andThen(Effect.never)
        )))`
      const child = yield* Effect.acquireRelease(
        Effect.sync(() =>
          ChildProcess.spawn(process.execPath, ["--input-type=module", "-e", script], {
            cwd: new URL("..", import.meta.url),
            stdio: ["ignore", "pipe", "inherit"]
          })
        ),
        (child) => Effect.sync(() => child.kill("SIGKILL"))
      )
      yield* Effect.promise(() =>
        new Promise<void>((resolve, reject) => {
          child.stdout?.on("data", (chunk: Buffer) => chunk.toString().includes("locked") && resolve())
          child.on("exit", (code) => reject(new Error(`the locking child exited early (${code})`)))
        })
      )
      const refused = yield* Effect.exit(Effect.scoped(lock(dir)))
      const error = Exit.isFailure(refused) ? Cause.squash(refused.cause) : undefined
      assert.instanceOf(error, DataDirLocked)
      if (error instanceof DataDirLocked) {
        assert.strictEqual(error.pid, child.pid)
        assert.include(error.message, dir)
        assert.include(error.message, `process ${child.pid}`)
      }
      // Killed without a chance to clean up: its lock file stays, stale.
      yield* Effect.promise(() => new Promise((resolve) => child.once("exit", resolve).kill("SIGKILL")))
      assert.isTrue(Fs.existsSync(Path.join(dir, LOCK_FILE)))
      yield* Effect.scoped(lock(dir))
    }), 30_000)

  it.live("released on close, then taken again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* Effect.scoped(lock(dir))
      yield* Effect.scoped(lock(dir))
      const again = yield* Effect.exit(Effect.scoped(Effect.andThen(lock(dir), Effect.scoped(lock(dir)))))
      assert.isTrue(Exit.isFailure(again), "a lock this process holds is not taken twice")
    }))
})
