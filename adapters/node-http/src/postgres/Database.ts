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
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type DataDirLocked, type DataDirLockError, lock } from "./DataDirLock.ts"
import { migrate } from "./migrations.ts"

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

/** A private directory for the socket: short (unix socket paths are limited to ~100 bytes). */
const socketDirectory = Effect.acquireRelease(
  Effect.try({
    try: () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "mp-pglite-")),
    catch: (cause) => new DatabaseError({ message: "Could not create a directory for the database socket", cause })
  }),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

const embedded = (dataDir: string): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, OpenError> =>
  PgClient.layerFrom(Effect.gen(function*() {
    const inMemory = dataDir === MEMORY
    if (!inMemory) yield* lock(dataDir)
    const where = inMemory ? "memory" : dataDir
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => PGlite.create(inMemory ? MEMORY : Path.join(dataDir, PGDATA)),
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

/** The migrated database: a server when `databaseUrl` is set, else the embedded one in `dataDir`. */
export const layer = (options: Options): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, OpenError> =>
  migrations.pipe(
    Layer.provideMerge(
      options.databaseUrl !== undefined && options.databaseUrl !== "" ? server(options.databaseUrl) : embedded(options.dataDir)
    )
  )

/** The module as one value, for `Database.layer(...)` at the call sites. */
export const Database = { layer, MEMORY } as const
