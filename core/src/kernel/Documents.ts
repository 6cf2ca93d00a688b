/**
 * A store of one kind of versioned record (an agent, an approval), kept as its Schema's encoded
 * form beside the few columns it is looked up by (docs/agents.md "Storage"). The record's Schema
 * is its one declaration; a kind (`DocumentKind`) says how to encode, decode and check one, and
 * whose it is. Each shell has one generic implementation for every kind (memory, PostgreSQL's
 * `documents` table, DynamoDB items), so a new kind of record needs no new table or item code.
 *
 * A record moves only by `swap`, a compare-and-set on its version, so two processes that read the
 * same version cannot both write (ATOMIC, between processes too): the loser reads again and
 * decides again. A stored record that does not decode, a duplicate id and input the kind's
 * `problem` refuses are defects.
 */
import { Effect, Option, Schema } from "effect"

/** What every kind of record has. */
export interface VersionedRecord {
  readonly id: string
  readonly created_at: string
  /** Bumped by every write: 0 when inserted. */
  readonly version: number
}

export interface DocumentKind<R extends VersionedRecord> {
  /** The kind's name, unique among kinds ("agent", "approval"): records of two kinds never meet. */
  readonly kind: string
  /** Whose the record is (an account, a person): `list` answers one owner's records. */
  readonly owner: (record: R) => string
  /** The stored form (JSON-safe). */
  readonly encode: (record: R) => unknown
  /** A stored form read back, or undefined when it is not one (a defect for the store). */
  readonly decode: (stored: unknown) => R | undefined
}

export interface DocumentStore<R extends VersionedRecord> {
  /** Stores a new record (version 0). */
  readonly insert: (record: R) => Effect.Effect<void>
  /** The record, if any (of any owner: callers check the owner). */
  readonly get: (id: string) => Effect.Effect<R | undefined>
  /** The owner's records, newest first (equal created_at: by id). */
  readonly list: (owner: string) => Effect.Effect<ReadonlyArray<R>>
  /**
   * ATOMIC compare-and-set: replaces the record with `next` (whose version is the stored one + 1)
   * only while the stored version is `next.version - 1` and the stored record is of next's owner;
   * answers whether it did.
   */
  readonly swap: (next: R) => Effect.Effect<boolean>
  /**
   * ATOMIC compare-and-delete: removes the record (and its place in its owner's list) only while
   * the stored one is at `record.version`; answers whether it did (false: gone already, or moved).
   */
  readonly remove: (record: R) => Effect.Effect<boolean>
}

/** Why a store must refuse this record (insert: version 0; swap: version >= 1), or undefined. */
export const documentProblem = <R extends VersionedRecord>(kind: DocumentKind<R>, r: R, op: "insert" | "swap"): string | undefined =>
  r.id.length === 0 || kind.owner(r).length === 0
    ? "ids must be non-empty"
    : op === "insert" && r.version !== 0
    ? `a new ${kind.kind} has version 0, got ${r.version}`
    : op === "swap" && r.version < 1
    ? `a swapped ${kind.kind} has version >= 1, got ${r.version}`
    : undefined

/**
 * The kind of the records a Schema declares: stored as the Schema's encoded form, read back
 * through it (a stored form that does not decode answers undefined, a defect for the store).
 */
export const documentKind = <R extends VersionedRecord, I>(
  kind: string,
  schema: Schema.Codec<R, I>,
  owner: (record: R) => string
): DocumentKind<R> => {
  const decode = Schema.decodeUnknownOption(schema)
  return {
    kind,
    owner,
    encode: Schema.encodeUnknownSync(schema),
    decode: (stored) => Option.getOrUndefined(decode(stored))
  }
}

/** Compare-and-set attempts before `updateDocument` gives up (a defect: the record is contended). */
const UPDATE_ATTEMPTS = 50

/**
 * Moves the record `id` by `change`, deciding again from the record as stored whenever another
 * writer won the swap. `change` answers the next record (its version is set here) or undefined to
 * leave it as it is; the answer is the record as written or left, or undefined when there is none.
 */
export const updateDocument = <R extends VersionedRecord, E, Q>(
  store: DocumentStore<R>,
  id: string,
  change: (current: R) => Effect.Effect<R | undefined, E, Q>
): Effect.Effect<R | undefined, E, Q> =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
      const current = yield* store.get(id)
      if (current === undefined) return undefined
      const changed = yield* change(current)
      if (changed === undefined) return current
      const next = { ...changed, version: current.version + 1 }
      if (yield* store.swap(next)) return next
    }
    return yield* Effect.die(new Error(`record ${id} changed under ${UPDATE_ATTEMPTS} writers in a row`))
  })
