/**
 * The contract suite of the document store port (core/src/kernel/Documents.ts), generic over the
 * kind of record: every shell runs it for every kind it stores (agents: AgentContract.ts,
 * approvals: ApprovalContract.ts), and `documentStoresContract` runs several kinds on one layer,
 * with a test that records of two kinds with the same id and owner never meet, and the
 * DocumentStores port (core/src/kernel/DocumentStores.ts): the same contract for a kind only this
 * suite has (`ContractNotes`), stored through it as an area's new kind is, and that `of` answers
 * stores over the same records however often it is asked. The layer is built once per suite and
 * shared by its tests, so every test works on fresh random ids.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { DocumentStores, generateId } from "@model-platform/core/kernel"
import type { DocumentKind, DocumentStore, VersionedRecord } from "@model-platform/core/kernel"
import { Context, Effect, Layer, Schema } from "effect"
import { assertDies } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

/** One kind of record, as the contract exercises it. */
export interface DocumentContractKind<I, R extends VersionedRecord> {
  /** The store's tag (`AgentStore`, `ApprovalStore`). */
  readonly tag: Context.Key<I, DocumentStore<R>>
  readonly kind: DocumentKind<R>
  /**
   * A record of `owner` with every field set (a fresh id, version 0, created at SampleRecords'
   * `at(0)`), then `overrides`.
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
        const second = yield* make(owner, { ...sparse, created_at: at(5) } as Partial<R>)
        const tieA = yield* make(owner, { id: yield* newId("a"), created_at: at(9) } as Partial<R>)
        const tieB = yield* make(owner, { id: yield* newId("b"), created_at: at(9) } as Partial<R>)
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

    it.effect("remove takes the record away only at the version stored, with its place in the owner's list", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const owner = yield* newOwner
        const record = yield* make(owner)
        const other = yield* make(owner, { created_at: at(5) } as Partial<R>)
        for (const r of [record, other]) yield* store.insert(r)
        const changed = { ...mark(record, "changed"), version: 1 }
        assert.isTrue(yield* store.swap(changed))
        // From a version no longer stored, or not yet: nothing changes.
        assert.isFalse(yield* store.remove(record))
        assert.isFalse(yield* store.remove({ ...record, version: 2 }))
        // The same id, another owner: not this record.
        assert.isFalse(yield* store.remove(yield* make(yield* newOwner, { id: record.id, version: 1 } as Partial<R>)))
        assert.isFalse(yield* store.remove({ ...record, id: yield* newId() }))
        assert.deepStrictEqual(yield* store.get(record.id), changed)
        assert.deepStrictEqual(yield* store.list(owner), [other, changed])
        // At the version stored now.
        assert.isTrue(yield* store.remove(changed))
        assert.isUndefined(yield* store.get(record.id))
        assert.deepStrictEqual(yield* store.list(owner), [other])
        // Gone already.
        assert.isFalse(yield* store.remove(changed))
        assert.isFalse(yield* store.swap({ ...changed, version: 2 }))
        assert.isUndefined(yield* store.get(record.id))
        assert.deepStrictEqual(yield* store.get(other.id), other)
      }))

    it.effect("removing one record leaves its owner's others listed, in order", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const owner = yield* newOwner
        const first = yield* make(owner)
        const tieA = yield* make(owner, { id: yield* newId("a"), created_at: at(9) } as Partial<R>)
        const tieB = yield* make(owner, { id: yield* newId("b"), created_at: at(9) } as Partial<R>)
        const last = yield* make(owner, { created_at: at(20) } as Partial<R>)
        for (const r of [first, tieA, tieB, last]) yield* store.insert(r)
        assert.isTrue(yield* store.remove(tieA))
        assert.deepStrictEqual(yield* store.list(owner), [last, tieB, first])
        assert.isTrue(yield* store.remove(last))
        assert.deepStrictEqual(yield* store.list(owner), [tieB, first])
        for (const r of [tieB, first]) assert.deepStrictEqual(yield* store.get(r.id), r)
      }))

    it.effect("concurrent removes of one version: exactly one removes it", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const owner = yield* newOwner
        const record = yield* make(owner)
        const kept = yield* make(owner, { created_at: at(5) } as Partial<R>)
        for (const r of [record, kept]) yield* store.insert(r)
        const removed = yield* Effect.forEach(Array.from({ length: 8 }, () => record), (r) => store.remove(r), {
          concurrency: "unbounded"
        })
        assert.strictEqual(removed.filter(Boolean).length, 1)
        assert.isUndefined(yield* store.get(record.id))
        assert.deepStrictEqual(yield* store.list(owner), [kept])
      }))

    it.effect("concurrent swaps and removes from one version: exactly one lands", () =>
      Effect.gen(function*() {
        const store = yield* tag
        const owner = yield* newOwner
        const record = yield* make(owner)
        yield* store.insert(record)
        const writers = Array.from({ length: 4 }, (_, i) => ({ ...mark(record, `writer-${i}`), version: 1 }))
        const [swapped, removed] = yield* Effect.all([
          Effect.forEach(writers, (next) => store.swap(next), { concurrency: "unbounded" }),
          Effect.forEach(writers, () => store.remove(record), { concurrency: "unbounded" })
        ], { concurrency: "unbounded" })
        assert.strictEqual([...swapped, ...removed].filter(Boolean).length, 1)
        const winner = writers.find((_, i) => swapped[i])
        assert.deepStrictEqual(yield* store.get(record.id), winner)
        assert.deepStrictEqual(yield* store.list(owner), winner === undefined ? [] : [winner])
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
      assert.isFalse(yield* storeA.remove(recordA))
      assert.deepStrictEqual(yield* storeB.get(id), recordB)
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
      // Removing one leaves the other.
      assert.isTrue(yield* storeA.remove(nextA))
      assert.isUndefined(yield* storeA.get(id))
      assert.deepStrictEqual(yield* storeB.get(id), nextB)
      assert.deepStrictEqual(yield* storeB.list(owner), [nextB])
    }))
}

// ---------------------------------------------------------------------------------------------
// the DocumentStores port

/** A note: a kind of record only this suite has, stored through `DocumentStores`. */
const ContractNote = Schema.Struct({
  id: Schema.String,
  owner: Schema.String,
  text: Schema.String,
  tags: Schema.Array(Schema.String),
  due: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  version: Schema.Int
})
type ContractNote = typeof ContractNote.Type

const decodeNote = Schema.decodeUnknownOption(ContractNote)

/** Notes as documents, owned by `owner`. */
export const ContractNotes: DocumentKind<ContractNote> = {
  kind: "contract_note",
  owner: (note) => note.owner,
  encode: Schema.encodeUnknownSync(ContractNote),
  decode: (stored) => {
    const decoded = decodeNote(stored)
    return decoded._tag === "Some" ? decoded.value : undefined
  }
}

/** The notes' store, as an area takes it from `DocumentStores`. */
class ContractNoteStore extends Context.Service<ContractNoteStore, DocumentStore<ContractNote>>()(
  "@model-platform/contract-kit/DocumentContract/ContractNoteStore"
) {}

const ContractNoteStoreLayer: Layer.Layer<ContractNoteStore, never, DocumentStores> = Layer.effect(
  ContractNoteStore,
  Effect.map(DocumentStores, (stores) => stores.of(ContractNotes))
)

/** Notes as the document store contract exercises them. */
const ContractNotesContract: DocumentContractKind<ContractNoteStore, ContractNote> = {
  tag: ContractNoteStore,
  kind: ContractNotes,
  make: Effect.fnUntraced(function*(owner: string, overrides: Partial<ContractNote> = {}) {
    const note: ContractNote = {
      id: yield* generateId("note"),
      owner,
      text: "Feldnotiz ü — 研究 ✓",
      tags: ["audio", "transcript"],
      due: at(86_400_000),
      created_at: at(0),
      version: 0,
      ...overrides
    }
    return note
  }),
  sparse: { tags: [], due: null, text: "" },
  mark: (note, text) => ({ ...note, text })
}

/** Declares that `DocumentStores.of` answers, for each kind, stores over the same records. */
export const documentStoresPortTests = <I>(
  it: Vitest.MethodsNonLive<I | DocumentStores>,
  specs: ReadonlyArray<DocumentContractKind<I, any>>
): void => {
  for (const spec of specs) {
    it.effect(`DocumentStores.of("${spec.kind.kind}") twice: stores over the same records`, () =>
      Effect.gen(function*() {
        const stores = yield* DocumentStores
        const first = stores.of(spec.kind)
        const second = stores.of(spec.kind)
        // A copy of the kind: the kind's name says which records.
        const copy = stores.of({ ...spec.kind })
        const owner = yield* generateId("owner")
        const record = yield* spec.make(owner)
        yield* first.insert(record)
        for (const store of [first, second, copy]) {
          assert.deepStrictEqual(yield* store.get(record.id), record)
          assert.deepStrictEqual(yield* store.list(owner), [record])
        }
        const next = { ...spec.mark(record, "moved"), version: 1 }
        assert.isTrue(yield* second.swap(next))
        assert.isFalse(yield* copy.swap({ ...spec.mark(record, "late"), version: 1 }))
        assert.deepStrictEqual(yield* first.get(record.id), next)
        assert.isFalse(yield* first.remove(record))
        assert.isTrue(yield* copy.remove(next))
        for (const store of [first, second, copy]) {
          assert.isUndefined(yield* store.get(record.id))
          assert.deepStrictEqual(yield* store.list(owner), [])
        }
      }))
  }
}

/** Declares the contract of one kind's store on `storeLayer` (built once for the suite). */
export const documentStoreContract = <I, R extends VersionedRecord, E>(
  name: string,
  storeLayer: Layer.Layer<I, E>,
  spec: DocumentContractKind<I, R>
): void =>
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })(name, (it) => documentStoreTests(it, spec))

/**
 * Declares the contract of every kind in `specs` on one layer providing all their stores and
 * DocumentStores (built once for the suite: one database, one table), and of `ContractNotes`
 * through DocumentStores; that every two of the kinds never meet; and that DocumentStores answers
 * each kind's stores over the same records.
 */
export const documentStoresContract = <I, E>(
  name: string,
  storesLayer: Layer.Layer<I | DocumentStores, E>,
  specs: ReadonlyArray<DocumentContractKind<I, any>>
): void =>
  layer(Layer.provideMerge(ContractNoteStoreLayer, storesLayer), { excludeTestServices: true, timeout: "60 seconds" })(name, (it) => {
    const all: ReadonlyArray<DocumentContractKind<I | ContractNoteStore, any>> = [...specs, ContractNotesContract]
    for (const spec of all) documentStoreTests(it, spec)
    describe("kinds apart", () => {
      all.forEach((a, i) => all.slice(i + 1).forEach((b) => documentKindsApartTests(it, a, b)))
    })
    describe("DocumentStores", () => documentStoresPortTests(it, all))
  })
