/**
 * @model-platform/postgres-stores/database: the migrated database the stores run on, a PostgreSQL
 * server (`databaseUrl`) or PGlite embedded in this process (its files in `dataDir`, or in memory),
 * and the data-directory lock the embedded one takes (which the Node shell's metering journal
 * takes too). Apart from the stores' entry so that importing the stores never loads PGlite.
 */
export * from "./Database.ts"
export { lock, LOCK_FILE } from "./DataDirLock.ts"
