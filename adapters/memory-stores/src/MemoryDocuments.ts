/**
 * The document store port (core/src/kernel/Documents.ts) in memory, for tests and the in-process
 * shell, one generic store for every kind of record: one Ref of encoded records per store (as the
 * other shells keep them, so a record that does not round-trip through its Schema fails here too),
 * each write a single `Ref.modify`. `AgentStoreMemory` (MemoryAgentStore.ts) and
 * `ApprovalStoreMemory` are this store for their kinds; `DocumentStoresMemory`, the DocumentStores
 * port, keeps one Ref per kind name.
 */
import { ApprovalDocuments, ApprovalStore } from "@model-platform/core/accounts"
import {
  type DocumentKind,
  documentProblem,
  type DocumentStore,
  DocumentStores,
  type VersionedRecord
} from "@model-platform/core/kernel"
import { newestFirst } from "@model-platform/core/plans"
import { Effect, Layer, Ref } from "effect"

type Records = Ref.Ref<ReadonlyMap<string, unknown>>

/** `kind`'s store over `state`, its encoded records by id. */
const storeOver = <R extends VersionedRecord>(kind: DocumentKind<R>, state: Records): DocumentStore<R> => {
  const die = (operation: string, problem: string) =>
    Effect.die(new Error(`DocumentStore(${kind.kind}).${operation}: ${problem}`))

  const decoded = (stored: unknown): Effect.Effect<R> => {
    const record = kind.decode(stored)
    return record === undefined ? die("read", `a stored ${kind.kind} does not decode`) : Effect.succeed(record)
  }

  const insert = (record: R) =>
    Effect.suspend(() => {
      const problem = documentProblem(kind, record, "insert")
      if (problem !== undefined) return die("insert", problem)
      const encoded = kind.encode(record)
      return Ref.modify(state, (s): readonly [boolean, ReadonlyMap<string, unknown>] =>
        s.has(record.id) ? [false, s] : [true, new Map(s).set(record.id, encoded)]
      ).pipe(Effect.flatMap((inserted) => (inserted ? Effect.void : die("insert", `duplicate id ${record.id}`))))
    })

  const get = (id: string) =>
    Effect.flatMap(Ref.get(state), (s) => (s.has(id) ? decoded(s.get(id)) : Effect.succeed(undefined)))

  const list = (owner: string) =>
    Effect.flatMap(Ref.get(state), (s) => Effect.forEach([...s.values()], decoded)).pipe(
      Effect.map((all) => all.filter((r) => kind.owner(r) === owner).sort(newestFirst))
    )

  const swap = (next: R) =>
    Effect.suspend(() => {
      const problem = documentProblem(kind, next, "swap")
      if (problem !== undefined) return die("swap", problem)
      const encoded = kind.encode(next)
      return Ref.modify(state, (s): readonly [boolean, ReadonlyMap<string, unknown>] => {
        const stored = s.get(next.id)
        const current = stored === undefined ? undefined : kind.decode(stored)
        return current !== undefined && current.version === next.version - 1 && kind.owner(current) === kind.owner(next)
          ? [true, new Map(s).set(next.id, encoded)]
          : [false, s]
      })
    })

  const remove = (record: R) =>
    Ref.modify(state, (s): readonly [boolean, ReadonlyMap<string, unknown>] => {
      const stored = s.get(record.id)
      const current = stored === undefined ? undefined : kind.decode(stored)
      if (current === undefined || current.version !== record.version || kind.owner(current) !== kind.owner(record)) {
        return [false, s]
      }
      const next = new Map(s)
      next.delete(record.id)
      return [true, next]
    })

  return { insert, get, list, swap, remove }
}

/** A new, empty store of `kind`'s records. */
export const documentStoreMemory = <R extends VersionedRecord>(kind: DocumentKind<R>): Effect.Effect<DocumentStore<R>> =>
  Effect.map(Ref.make<ReadonlyMap<string, unknown>>(new Map()), (state) => storeOver(kind, state))

/** The approval store port (core/src/accounts/ApprovalStore.ts) in memory. */
export const ApprovalStoreMemory: Layer.Layer<ApprovalStore> = Layer.effect(
  ApprovalStore,
  Effect.map(documentStoreMemory(ApprovalDocuments), ApprovalStore.of)
)

/**
 * The DocumentStores port (core/src/kernel/DocumentStores.ts) in memory: each layer built starts
 * empty; a kind name's records are made on its first `of`, and its store is kept for the next.
 */
export const DocumentStoresMemory: Layer.Layer<DocumentStores> = Layer.sync(DocumentStores, () => {
  const made = new Map<string, { readonly kind: DocumentKind<any>; readonly state: Records; readonly store: DocumentStore<any> }>()
  return DocumentStores.of({
    of: <R extends VersionedRecord>(kind: DocumentKind<R>): DocumentStore<R> => {
      const known = made.get(kind.kind)
      if (known !== undefined && known.kind === kind) return known.store
      // Another object of a known kind name: its own codec over the same records.
      const state = known?.state ?? Ref.makeUnsafe<ReadonlyMap<string, unknown>>(new Map())
      const store = storeOver(kind, state)
      if (known === undefined) made.set(kind.kind, { kind, state, store })
      return store
    }
  })
})
