/**
 * The contract suite of the document store port (core/src/ports/Documents.ts), generic over the
 * kind of record: every shell runs it for every kind it stores (agents: AgentContract.ts,
 * approvals: ApprovalContract.ts), and `documentStoresContract` runs several kinds on one layer,
 * with a test that records of two kinds with the same id and owner never meet. The layer is built
 * once per suite and shared by its tests, so every test works on fresh random ids.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { generateId } from "@model-platform/core/Keys"
import type { DocumentKind, DocumentStore, VersionedRecord } from "@model-platform/core/ports/Documents"
import { type Timestamp, toTimestamp } from "@model-platform/core/Time"
import { type Context, Effect, type Layer } from "effect"
import { assertDies } from "./ContractSupport.ts"

const BASE = Date.UTC(2026, 0, 15, 10, 20, 30, 456)

/** A fixed instant of the contracts, `ms` after their base time. */
export const contractTime = (ms: number): Timestamp => toTimestamp(BASE + ms)

/** One kind of record, as the contract exercises it. */
export interface DocumentContractKind<I, R extends VersionedRecord> {
  /** The store's tag (`AgentStore`, `ApprovalStore`). */
  readonly tag: Context.Key<I, DocumentStore<R>>
  readonly kind: DocumentKind<R>
  /**
   * A record of `owner` with every field set (a fresh id, version 0, created at `contractTime(0)`),
   * then `overrides`.
   */
  readonly make: (owner: string, overrides?: Partial<R>) => Effect.Effect<R>
  /** Overrides emptying every field that may be empty (nulls, empty lists), with text beyond ASCII. */
  readonly sparse: Partial<R>
  /** The record with `text` in one of its text fields (what a writer changes). */
  readonly mark: (record: R, text: string) => R
}

/** Declares the contract of one kind's store, inside a suite whose layer provides it. */
export const documentStoreTests = <I, R extends VersionedRecord>(
  it: Vitest.MethodsNonLive<I>,
  spec: DocumentContractKind<I, R>
): void => {
  const { kind, make, mark, sparse, tag } = spec
  const newOwner = generateId("owner")
  const newId = (prefix = "") => Effect.map(generateId("x"), (x) => `${kind.kind}_${prefix}${x}`)

  describe(`${kind.kind} documents`, () => {
    it.effect("insert then read: every field exactly; the owner's records newest first, then by id", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const owner = yield* newOwner
        const first = yield* make(owner)
        const second = yield* make(owner, { ...sparse, created_at: contractTime(5) } as Partial<R>)
        const tieA = yield* make(owner, { id: yield* newId("a"), created_at: contractTime(9) } as Partial<R>)
        const tieB = yield* make(owner, { id: yield* newId("b"), created_at: contractTime(9) } as Partial<R>)
        for (const r of [first, second, tieB, tieA]) yield* store.insert(r)
        assert.deepStrictEqual(yield* store.get(first.id), first)
        assert.deepStrictEqual(yield* store.get(second.id), second)
        assert.deepStrictEqual(yield* store.list(owner), [tieA, tieB, second, first])
        assert.deepStrictEqual(yield* store.list(yield* newOwner), [])
        assert.isUndefined(yield* store.get(yield* newId()))
      }))

    it.effect("swap replaces the record only from the version it was read at", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const owner = yield* newOwner
        const record = yield* make(owner)
        yield* store.insert(record)
        const changed = { ...mark(record, "changed ✓"), version: 1 }
        assert.isTrue(yield* store.swap(changed))
        assert.deepStrictEqual(yield* store.get(record.id), changed)
        // From a version no longer stored: nothing changes.
        assert.isFalse(yield* store.swap({ ...mark(record, "stale"), version: 1 }))
        assert.isFalse(yield* store.swap({ ...record, version: 3 }))
        assert.deepStrictEqual(yield* store.get(record.id), changed)
        assert.isFalse(yield* store.swap({ ...record, id: yield* newId(), version: 1 }))
        // From the version stored now.
        const again = { ...mark(changed, "again"), version: 2 }
        assert.isTrue(yield* store.swap(again))
        assert.deepStrictEqual(yield* store.list(owner), [again])
      }))

    it.effect("concurrent swaps from one version: exactly one wins", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const record = yield* make(yield* newOwner)
        yield* store.insert(record)
        const writers = Array.from({ length: 8 }, (_, i) => ({ ...mark(record, `writer-${i}`), version: 1 }))
        const won = yield* Effect.forEach(writers, (next) => store.swap(next), { concurrency: "unbounded" })
        assert.strictEqual(won.filter(Boolean).length, 1)
        assert.deepStrictEqual(yield* store.get(record.id), writers[won.indexOf(true)])
      }))

    it.effect("broken records are defects and store nothing", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const owner = yield* newOwner
        const record = yield* make(owner)
        yield* assertDies(store.insert({ ...record, version: 1 }), `a new ${kind.kind} at version 1`)
        yield* assertDies(store.insert(yield* make("", { id: record.id } as Partial<R>)), "an empty owner")
        yield* assertDies(store.insert({ ...record, id: "" }), "an empty id")
        assert.isUndefined(yield* store.get(record.id))
        assert.deepStrictEqual(yield* store.list(owner), [])
        yield* store.insert(record)
        yield* assertDies(store.insert(record), "a duplicate id")
        yield* assertDies(store.swap({ ...record, version: 0 }), "a swap to version 0")
        // The same id, another owner: not this record.
        const stranger = yield* make(yield* newOwner, { id: record.id } as Partial<R>)
        assert.isFalse(yield* store.swap({ ...stranger, version: 1 }))
        assert.deepStrictEqual(yield* store.get(record.id), record)
      }))
  })
}

/** Declares that records of kinds `a` and `b` with the same id and owner never meet. */
export const documentKindsApartTests = <I, A extends VersionedRecord, B extends VersionedRecord>(
  it: Vitest.MethodsNonLive<I>,
  a: DocumentContractKind<I, A>,
  b: DocumentContractKind<I, B>
): void => {
  it.effect(`records of kinds "${a.kind.kind}" and "${b.kind.kind}" with the same id and owner do not meet`, () =>
    Effect.gen(function*() {
      const storeA = yield* a.tag
      const storeB = yield* b.tag
      const owner = yield* generateId("owner")
      const id = yield* generateId("shared")
      const recordA = yield* a.make(owner, { id } as Partial<A>)
      const recordB = yield* b.make(owner, { id } as Partial<B>)
      yield* storeB.insert(recordB)
      assert.isUndefined(yield* storeA.get(id))
      assert.deepStrictEqual(yield* storeA.list(owner), [])
      assert.isFalse(yield* storeA.swap({ ...recordA, version: 1 }))
      // Not a duplicate: another kind's id.
      yield* storeA.insert(recordA)
      assert.deepStrictEqual(yield* storeA.get(id), recordA)
      assert.deepStrictEqual(yield* storeB.get(id), recordB)
      assert.deepStrictEqual(yield* storeA.list(owner), [recordA])
      assert.deepStrictEqual(yield* storeB.list(owner), [recordB])
      // Each swaps from its own version; the other stays as it was.
      const nextA = { ...a.mark(recordA, "moved"), version: 1 }
      assert.isTrue(yield* storeA.swap(nextA))
      assert.deepStrictEqual(yield* storeB.get(id), recordB)
      const nextB = { ...b.mark(recordB, "moved"), version: 1 }
      assert.isTrue(yield* storeB.swap(nextB))
      assert.deepStrictEqual(yield* storeA.get(id), nextA)
      assert.deepStrictEqual(yield* storeB.list(owner), [nextB])
    }))
}

/** Declares the contract of one kind's store on `storeLayer` (built once for the suite). */
export const documentStoreContract = <I, R extends VersionedRecord, E>(
  name: string,
  storeLayer: Layer.Layer<I, E>,
  spec: DocumentContractKind<I, R>
): void =>
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })(name, (it) => documentStoreTests(it, spec))

/**
 * Declares the contract of every kind in `specs` on one layer providing all their stores (built
 * once for the suite: one database, one table), and that every two of the kinds never meet.
 */
export const documentStoresContract = <I, E>(
  name: string,
  storesLayer: Layer.Layer<I, E>,
  specs: ReadonlyArray<DocumentContractKind<I, any>>
): void =>
  layer(storesLayer, { excludeTestServices: true, timeout: "60 seconds" })(name, (it) => {
    for (const spec of specs) documentStoreTests(it, spec)
    describe("kinds apart", () => {
      specs.forEach((a, i) => specs.slice(i + 1).forEach((b) => documentKindsApartTests(it, a, b)))
    })
  })
