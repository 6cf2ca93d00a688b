/**
 * An exclusive lock on a data directory, held by one process at a time. PGlite takes no lock of
 * its own and two processes on one directory corrupt it, so the embedded database takes this
 * one before opening it.
 *
 * The lock is a file holding the owner's pid and a random token. It is created complete and
 * atomically (written aside, then hard-linked into place, which fails when the file exists). A
 * lock whose pid is no longer running is stale and taken over: it is first renamed aside (only one
 * contender can rename a given file), and put back if what was moved turns out not to be the
 * stale lock that was judged. A lock with our own pid is stale unless this process holds it (a
 * restarted container often gets the same pid). Limitation: a pid reused by an unrelated live
 * process keeps the lock held; the error names the file to delete in that case.
 */
import { Data, Effect, Predicate, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

export class DataDirLocked extends Data.TaggedError("DataDirLocked")<{
  readonly dataDir: string
  readonly pid: number
  readonly lockFile: string
}> {
  override get message() {
    return `The data directory ${this.dataDir} is in use by process ${this.pid}. ` +
      `Stop that process, or choose another data directory. If no such process uses it, delete ${this.lockFile}.`
  }
}

export class DataDirLockError extends Data.TaggedError("DataDirLockError")<{
  readonly dataDir: string
  readonly cause: unknown
}> {
  override get message() {
    return `Could not lock the data directory ${this.dataDir}: ${String(this.cause)}`
  }
}

export const LOCK_FILE = "platform.lock"

interface Holder {
  readonly pid: number
  readonly token: string
}

/** Locks held by this process, by lock file path, with their tokens. */
const held = new Map<string, string>()

const readHolder = (file: string): Holder | undefined => {
  let text: string
  try {
    text = Fs.readFileSync(file, "utf8")
  } catch (error) {
    if (isCode(error, "ENOENT")) return undefined
    throw error
  }
  try {
    const parsed: unknown = JSON.parse(text)
    return Predicate.hasProperty(parsed, "pid") && Predicate.isNumber(parsed.pid) &&
        Predicate.hasProperty(parsed, "token") && Predicate.isString(parsed.token)
      ? { pid: parsed.pid, token: parsed.token }
      : { pid: 0, token: "" }
  } catch {
    // Unreadable content cannot come from a live owner (the file is written before it is linked).
    return { pid: 0, token: "" }
  }
}

const isCode = (error: unknown, code: string) => Predicate.hasProperty(error, "code") && error.code === code

const isRunning = (pid: number): boolean => {
  if (pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return isCode(error, "EPERM")
  }
}

const isLive = (file: string, holder: Holder) =>
  holder.pid === process.pid ? held.get(file) === holder.token : isRunning(holder.pid)

/** Takes the lock or throws DataDirLocked; returns the token that proves ownership. */
const acquireSync = (dataDir: string, file: string): string => {
  const token = crypto.randomUUID()
  const content = JSON.stringify({ pid: process.pid, token })
  const aside = `${file}.${process.pid}.${token}`
  for (let attempt = 0; attempt < 10; attempt++) {
    Fs.writeFileSync(aside, content)
    try {
      Fs.linkSync(aside, file)
      held.set(file, token)
      return token
    } catch (error) {
      if (!isCode(error, "EEXIST")) throw error
    } finally {
      Fs.rmSync(aside, { force: true })
    }
    const holder = readHolder(file)
    if (holder === undefined) continue
    if (isLive(file, holder)) throw new DataDirLocked({ dataDir, pid: holder.pid, lockFile: file })
    // Stale: move it aside, then check that what moved is the lock that was judged stale.
    const stale = `${file}.stale.${process.pid}.${token}`
    try {
      Fs.renameSync(file, stale)
    } catch (error) {
      if (isCode(error, "ENOENT")) continue
      throw error
    }
    const moved = readHolder(stale)
    if (moved !== undefined && moved.token !== holder.token) {
      // Another process replaced the stale lock meanwhile: give its lock back.
      try {
        Fs.linkSync(stale, file)
      } catch (error) {
        if (!isCode(error, "EEXIST")) throw error
      }
      Fs.rmSync(stale, { force: true })
      throw new DataDirLocked({ dataDir, pid: moved.pid, lockFile: file })
    }
    Fs.rmSync(stale, { force: true })
  }
  throw new Error(`gave up taking ${file} after repeated races`)
}

const releaseSync = (file: string, token: string) => {
  held.delete(file)
  if (readHolder(file)?.token === token) Fs.rmSync(file, { force: true })
}

/**
 * Holds the lock on `dataDir` (created if missing) for the life of the scope.
 * Fails with DataDirLocked when another live process holds it, or this process already does.
 */
export const lock = (dataDir: string): Effect.Effect<void, DataDirLocked | DataDirLockError, Scope.Scope> => {
  const file = Path.join(Path.resolve(dataDir), LOCK_FILE)
  return Effect.acquireRelease(
    Effect.try({
      try: () => {
        Fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
        return acquireSync(dataDir, file)
      },
      catch: (cause) => cause instanceof DataDirLocked ? cause : new DataDirLockError({ dataDir, cause })
    }),
    (token) => Effect.sync(() => releaseSync(file, token))
  ).pipe(Effect.asVoid)
}
