/** Idempotency records at rest (IdempotencyRecordsSuite.ts) through the in-process web handler, read from the memory store's map. */
import type { IdempotencyRecord } from "@model-platform/core/http"
import { Effect, Ref } from "effect"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { idempotencyRecordsSuite } from "../src/IdempotencyRecordsSuite.ts"
import { startInProcess } from "../src/InProcess.ts"
import { idempotencyStoreMemoryOn } from "@model-platform/memory-stores/MemoryStores"

idempotencyRecordsSuite("in-process, memory stores", async ({ clock }) => {
  const records = Ref.makeUnsafe<ReadonlyMap<string, IdempotencyRecord>>(new Map())
  const shell = await startInProcess(fixtureCatalogue, idempotencyStoreMemoryOn(records), { clock })
  return { ...shell, idempotencyRecords: async () => [...Effect.runSync(Ref.get(records)).values()] as Array<any> }
})
