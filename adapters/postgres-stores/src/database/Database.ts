/**
 * The database of the Node adapter: a `SqlClient` (and `PgClient`) on a migrated Postgres.
 *
 * - With a `databaseUrl`: that PostgreSQL server, through @effect/sql-pg's pool.
 * - Without: the embedded default, PGlite (Postgres in WASM) keeping its files under `dataDir`,
 *   served on a private unix socket by pglite-socket so @effect/sql-pg connects to it unchanged.
 *   The directory is locked for the life of the layer (PGlite takes no lock itself, and two
 *   processes on one directory corrupt it). `dataDir: "memory://"` keeps everything in memory
 *   (tests): no directory, no lock.
 *
 * Everything is scoped: closing the layer closes the client, the socket server, PGlite (which
 * writes its files back) and then releases the lock.
 */
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Data, Effect, Layer, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { type DataDirLocked, type DataDirLockError, lock } from "./DataDirLock.ts"
import { migrate } from "../migrations.ts"

export { DataDirLocked, DataDirLockError } from "./DataDirLock.ts"

/** The `dataDir` of a throwaway in-memory embedded database. */
export const MEMORY = "memory://"

export interface Options {
  /** A PostgreSQL server (`postgres://user:password@host:port/database`); wins over `dataDir`. */
  readonly databaseUrl?: string | undefined
  /** Where the embedded database keeps its files, or MEMORY. */
  readonly dataDir: string
}

export class DatabaseError extends Data.TaggedError("DatabaseError")<{
  readonly message: string
  readonly cause: unknown
}> {}

export type OpenError = DatabaseError | DataDirLocked | DataDirLockError

/** Where PGlite's own files go inside the data directory (the lock file sits beside them). */
export const PGDATA = "pgdata"

/** PGlite answers as the superuser `postgres` on the database `postgres`. */
const EMBEDDED_USER = { username: "postgres", database: "postgres" } as const

/**
 * The embedded server's memory: PostgreSQL's defaults (shared_buffers 128 MB) are sized for a
 * dedicated server, and in PGlite they live in the Node process (WebAssembly memory): with these,
 * `./platform start` idles at about half the RSS (docs/performance.md "Memory"). One process, one
 * connection: the data a local platform holds fits in them.
 */
const EMBEDDED_SETTINGS = [
  "shared_buffers = 16MB",
  "wal_buffers = 1MB",
  "temp_buffers = 2MB",
  "work_mem = 2MB",
  "maintenance_work_mem = 16MB"
]

/** A private directory for the socket: short (unix socket paths are limited to ~100 bytes). */
const socketDirectory = Effect.acquireRelease(
  Effect.try({
    try: () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "mp-pglite-")),
    catch: (cause) => new DatabaseError({ message: "Could not create a directory for the database socket", cause })
  }),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

/** Run in a child process: creates the cluster in PGLITE_DIR with PGlite (CommonJS build), then exits. */
const INITDB_SCRIPT = `
const { PGlite } = require(process.env.PGLITE_MAIN)
PGlite.create(process.env.PGLITE_DIR, { postgresqlconf: JSON.parse(process.env.PGLITE_CONF) })
  .then((db) => db.close())
  .then(() => process.exit(0), (error) => { console.error(error); process.exit(1) })`

/**
 * Creates a new embedded cluster (initdb) in a child process: initdb's WebAssembly instance peaks
 * at about 650 MB, which this process would keep resident for its whole life after the first start
 * (docs/performance.md "Memory"); in a child it goes when the child ends.
 */
const initdbApart = (pgdata: string) =>
  Effect.tryPromise({
    try: () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, ["-e", INITDB_SCRIPT], {
          env: {
            ...process.env,
            PGLITE_MAIN: createRequire(import.meta.url).resolve("@electric-sql/pglite"),
            PGLITE_DIR: pgdata,
            PGLITE_CONF: JSON.stringify(EMBEDDED_SETTINGS)
          },
          stdio: ["ignore", "inherit", "inherit"]
        })
        child.once("error", reject)
        child.once("exit", (code, signal) => (code === 0 ? resolve() : reject(new Error(`initdb ended with ${signal ?? code}`))))
      }),
    catch: (cause) => new DatabaseError({ message: `Could not create the embedded database in ${pgdata}`, cause })
  })

const embedded = (dataDir: string): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, OpenError> =>
  PgClient.layerFrom(Effect.gen(function*() {
    const inMemory = dataDir === MEMORY
    if (!inMemory) yield* lock(dataDir)
    if (!inMemory && !Fs.existsSync(Path.join(dataDir, PGDATA, "PG_VERSION"))) yield* initdbApart(Path.join(dataDir, PGDATA))
    const where = inMemory ? "memory" : dataDir
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => PGlite.create(inMemory ? MEMORY : Path.join(dataDir, PGDATA), { postgresqlconf: EMBEDDED_SETTINGS }),
        catch: (cause) => new DatabaseError({ message: `Could not open the embedded database (${where})`, cause })
      }),
      (db) => Effect.promise(() => db.close())
    )
    const socket = Path.join(yield* socketDirectory, ".s.PGSQL.5432")
    // One connection only: PGlite is one backend, and the socket server's protocol handling breaks
    // with several clients interleaving (STACK.md).
    const server = new PGLiteSocketServer({ db, path: socket, maxConnections: 1 })
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => server.start(),
        catch: (cause) => new DatabaseError({ message: `Could not serve the embedded database on ${socket}`, cause })
      }),
      () => Effect.promise(() => server.stop())
    )
    // minConnections 1 too, so the pool never drops and reopens the single connection when idle.
    return yield* PgClient.make({ path: socket, ...EMBEDDED_USER, maxConnections: 1, minConnections: 1 }).pipe(
      Effect.mapError((cause) => new DatabaseError({ message: `Could not connect to the embedded database (${where})`, cause }))
    )
  }))

const server = (url: string): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, OpenError> =>
  PgClient.layerFrom(PgClient.make({ url: Redacted.make(url) }).pipe(
    Effect.mapError((cause) => new DatabaseError({ message: "Could not connect to the database at DATABASE_URL", cause }))
  ))

const migrations = Layer.effectDiscard(
  migrate.pipe(Effect.mapError((cause) => new DatabaseError({ message: "Database migrations failed", cause })))
)

/** Whether these options open a PostgreSQL server (a `databaseUrl`), not the embedded database. */
export const onServer = (options: Options): options is Options & { readonly databaseUrl: string } =>
  options.databaseUrl !== undefined && options.databaseUrl !== ""

/** The migrated database: a server when `databaseUrl` is set, else the embedded one in `dataDir`. */
export const layer = (options: Options): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, OpenError> =>
  migrations.pipe(Layer.provideMerge(onServer(options) ? server(options.databaseUrl) : embedded(options.dataDir)))

/** The module as one value, for `Database.layer(...)` at the call sites. */
export const Database = { layer, onServer, MEMORY } as const
