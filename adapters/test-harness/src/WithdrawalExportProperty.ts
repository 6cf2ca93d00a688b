/**
 * A withdrawal reaches every export (docs/datasets.md "Version exports", docs/fieldwork.md
 * "Withdrawal"), under any interleaving (fast-check's scheduler gates every record and blob
 * operation): participants withdraw while exports are made, with exports made before too. Once
 * all have finished:
 * - every export's manifest (the blob itself) lists exactly the takes still in the dataset, none
 *   of a withdrawn participant, and the export's counts are the manifest's;
 * - a withdrawn participant's record keeps none of the fields the person gave.
 * Each shell runs it on its stores.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Caller } from "@model-platform/core/keys"
import { BlobStore, Datasets, ExportDocuments } from "@model-platform/core/datasets"
import type { DatasetItem } from "@model-platform/core/datasets"
import { encodeWav, Ingest, ParticipantDocuments, Projects } from "@model-platform/core/fieldwork"
import { DocumentStores, generateId, sha256, toHex } from "@model-platform/core/kernel"
import fc from "fast-check"
import { Effect, Layer } from "effect"
import { gated } from "./FieldworkProperty.ts"
import { RateLimitStoreMemory } from "@model-platform/memory-stores/MemoryRateLimitStore"

const ORIGIN = "https://study.example"
const WAV = encodeWav(Array.from({ length: 800 }, (_, i) => Math.sin(i / 4) / 2), 16000)

interface Scenario {
  /** Takes each of the two participants sent before. */
  readonly takes: readonly [number, number]
  /** The second participant withdraws too: two rewrites of one manifest at once. */
  readonly bothWithdraw: boolean
  readonly exportsBefore: number
  readonly exportsDuring: number
}

const scenarios: fc.Arbitrary<Scenario> = fc.record({
  takes: fc.tuple(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 1, max: 2 })),
  bothWithdraw: fc.boolean(),
  exportsBefore: fc.integer({ min: 0, max: 1 }),
  exportsDuring: fc.integer({ min: 1, max: 2 })
})

export const withdrawalExportProperty = <E>(name: string, stores: Layer.Layer<DocumentStores | BlobStore, E>, numRuns: number) =>
  describe(`withdrawals racing exports, on ${name}`, () => {
    it.effect("every export manifest lists exactly the takes left, none of a withdrawn participant, whose record is erased (fast-check scheduler)", () =>
      Effect.gen(function*() {
        const context = yield* Effect.context<DocumentStores | BlobStore>()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.scheduler(), scenarios, async (s, scenario) => {
              let on = false
              const gate = <A, X, R>(effect: Effect.Effect<A, X, R>) =>
                Effect.suspend(() => (on ? Effect.andThen(Effect.promise(() => s.schedule(Promise.resolve())), effect) : effect))
              const gatedStores = Layer.mergeAll(
                Layer.effect(DocumentStores, Effect.map(DocumentStores, (d) => DocumentStores.of({ of: (kind) => gated(d.of(kind), gate) }))),
                Layer.effect(BlobStore, Effect.map(BlobStore, (b) => BlobStore.of(gated(b, gate))))
              )
              const services = Layer.mergeAll(Projects.layer, Ingest.layer()).pipe(
                Layer.provideMerge(Datasets.layer),
                Layer.provideMerge(gatedStores),
                Layer.provideMerge(RateLimitStoreMemory)
              )
              const program = Effect.gen(function*() {
                const projects = yield* Projects
                const ingest = yield* Ingest
                const datasets = yield* Datasets
                const blobs = yield* BlobStore
                const caller = { account: { id: yield* generateId("acct") } } as unknown as Caller
                const project = yield* projects.create(caller, {
                  name: "race",
                  prompts: [{ text: "one" }, { text: "two" }],
                  questions: [{ id: "accent", text: "Accent", kind: "text", required: false }],
                  consent: { version: "v1", text: "ok", scopes: [{ id: "rec", label: "keep", required: true }] },
                  challenge_difficulty: 0
                })
                const key = yield* projects.createKey(caller, project.id, { origins: [ORIGIN] })
                const flow = yield* ingest.authenticate(key.key, ORIGIN)
                const participants = yield* Effect.forEach(scenario.takes, (takes) =>
                  Effect.gen(function*() {
                    const challenge = yield* ingest.challenge(flow)
                    const made = yield* ingest.createParticipant(
                      flow,
                      { country: "NO", region: "Oslo", dob: "1990-01-01", answers: { accent: "north" }, challenge: challenge.challenge, nonce: "0" },
                      undefined
                    )
                    yield* ingest.consent(flow, made.token, { given: { rec: true } })
                    for (const prompt of ["p1", "p2"].slice(0, takes)) {
                      yield* ingest.addTake(flow, made.token, {
                        promptId: prompt,
                        contentType: "audio/wav",
                        contentSha256: toHex(sha256(WAV)),
                        meta: undefined,
                        body: WAV
                      })
                    }
                    return made
                  }))
                for (let i = 0; i < scenario.exportsBefore; i++) yield* datasets.createExport(caller, project.dataset_id)
                const withdrawing = scenario.bothWithdraw ? participants : participants.slice(0, 1)

                on = true
                yield* Effect.all([
                  ...withdrawing.map((p) => ingest.withdraw(flow, p.token)),
                  ...Array.from({ length: scenario.exportsDuring }, () => datasets.createExport(caller, project.dataset_id))
                ], { concurrency: "unbounded" })
                on = false

                const violations: Array<string> = []
                const left = (yield* datasets.items.list(project.dataset_id)).map((i) => i.id).sort()
                const expected = scenario.bothWithdraw ? 0 : scenario.takes[1]
                if (left.length !== expected) violations.push(`${left.length} takes left, ${expected} expected`)
                const exports = (yield* datasets.listExports(caller, project.dataset_id)).data
                if (exports.length !== scenario.exportsBefore + scenario.exportsDuring) violations.push(`${exports.length} exports`)
                for (const e of exports) {
                  const record = yield* (yield* DocumentStores).of(ExportDocuments).get(e.id)
                  const blob = record === undefined ? undefined : yield* blobs.get(record.manifest_key)
                  const listed = blob === undefined
                    ? []
                    : (JSON.parse(new TextDecoder().decode(blob.body)) as { items: ReadonlyArray<DatasetItem> }).items
                  const ids = listed.map((i) => i.id).sort()
                  if (JSON.stringify(ids) !== JSON.stringify(left)) violations.push(`export ${e.id} lists ${ids.join(",")}; the dataset has ${left.join(",")}`)
                  const bytes = listed.reduce((sum, i) => sum + i.bytes, 0)
                  if (e.items !== listed.length || e.bytes !== bytes) {
                    violations.push(`export ${e.id} counts ${e.items} items, ${e.bytes} bytes; its manifest ${listed.length}, ${bytes}`)
                  }
                }
                // No blob of the dataset (an older manifest included) names a withdrawn participant.
                for (const key of yield* blobs.list(`datasets/${project.dataset_id}/`)) {
                  const text = new TextDecoder().decode((yield* blobs.get(key))?.body)
                  for (const p of withdrawing) if (text.includes(p.participant_id)) violations.push(`${key} names withdrawn ${p.participant_id}`)
                }
                for (const p of withdrawing) {
                  const record = yield* (yield* DocumentStores).of(ParticipantDocuments).get(p.participant_id)
                  if (record === undefined || record.withdrawn_at === null) violations.push(`participant ${p.participant_id} is not withdrawn`)
                  else if (record.dob !== null || record.country !== null || record.region !== null || Object.keys(record.answers).length > 0) {
                    violations.push(`the withdrawn participant's record keeps their fields: ${JSON.stringify(record)}`)
                  }
                }
                return violations
              })
              const violations = await s.waitFor(Effect.runPromise(program.pipe(Effect.provide(services), Effect.provide(context))))
              assert.deepStrictEqual(violations, [], JSON.stringify(scenario))
            }),
            { numRuns }
          )
        )
      }).pipe(Effect.provide(stores)), 600_000)
  })
